package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// checkLeanFile is Lean file mode:
//
//  1. untrusted: `lake env lean -o Proof.olean Proof.lean` in a fresh
//     directory; only Proof.olean comes out.
//  2. trusted: in a fresh directory with that olean and a generated
//     Check.lean (`import Proof`, the statement, the check theorem and
//     `#print axioms`), run lean. The statement is elaborated after the
//     import here, so the proof's global notations are in scope: see
//     docs/verify.md for why this mode is weaker than Coq's and what the
//     replay step it needs is.
//
// Untested against real Lean (not installable here); TestLeanFileReal
// runs it when lake is on PATH.
func (c *Checker) checkLeanFile(ctx context.Context, run RunFunc, p *Profile, spec *messages.VerifySpec) (*messages.Verdict, Usage, error) {
	var u Usage
	if v := leanUnsafeSource(spec.Proof); v != nil {
		return v, u, nil
	}
	dir, cleanup, err := c.scratch("lean-")
	if err != nil {
		return nil, u, err
	}
	defer cleanup()
	compileDir, checkDir := filepath.Join(dir, "compile"), filepath.Join(dir, "check")
	src := spec.Proof
	if spec.Header != "" {
		src = spec.Header + "\n" + src
	}
	if err := writeScratch(compileDir, map[string][]byte{"Proof.lean": []byte(src)}); err != nil {
		return nil, u, err
	}
	lean := func(args ...string) []string {
		return append([]string{p.Lean.Lake, "-d", p.Lean.Project, "env", "lean"}, args...)
	}
	out, v, err := runStep(ctx, run, p, &u, sandbox.Spec{Argv: lean("-o", "Proof.olean", "Proof.lean"), Scratch: compileDir})
	if v != nil || err != nil {
		return v, u, err
	}
	if out.res.ExitCode != 0 {
		return reject(messages.ReasonCompileError, out.output()), u, nil
	}
	if strings.Contains(out.output(), "declaration uses 'sorry'") || strings.Contains(out.output(), "declaration uses `sorry`") {
		return reject(messages.ReasonIncomplete, out.output()), u, nil
	}
	olean, err := readResult(compileDir, "Proof.olean", p.Limits.FileSizeBytes)
	if err != nil {
		return reject(messages.ReasonCompileError, "no Proof.olean: "+err.Error()), u, nil
	}
	n := nonce()
	check := "warren_check_" + n
	checkSrc := fmt.Sprintf("import Proof\ntheorem %s : (%s) := @%s\n#print axioms %s\n", check, spec.Statement, spec.Theorem, check)
	if err := writeScratch(checkDir, map[string][]byte{"Proof.olean": olean, "Check.lean": []byte(checkSrc)}); err != nil {
		return nil, u, err
	}
	out, v, err = runStep(ctx, run, p, &u, sandbox.Spec{Argv: lean("Check.lean"), Scratch: checkDir,
		Env: map[string]string{"LEAN_PATH": checkDir}})
	if v != nil || err != nil {
		return v, u, err
	}
	if out.res.ExitCode != 0 {
		return reject(messages.ReasonStatementMismatch, out.output()), u, nil
	}
	// lean prints the #print axioms answer as "'name' depends on ...".
	var msgs []replMessage
	for _, block := range strings.Split(out.stdout, "\n'") {
		msgs = append(msgs, replMessage{Severity: "info", Data: "'" + strings.TrimPrefix(strings.TrimSpace(block), "'")})
	}
	axioms, err := parseLeanAxioms(msgs, check)
	if err != nil {
		return reject(messages.ReasonCrash, err.Error()+"\n"+out.output()), u, nil
	}
	return leanAxiomVerdict(p, axioms), u, nil
}
