package verify

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// leanName is a theorem name the checker can pass on its command line and
// read back with String.toName: dotted Lean identifiers, no «» escapes.
var leanName = messages.NewLazyRegexp(`^[\p{L}_][\p{L}\p{N}_'!?]*(\.[\p{L}_][\p{L}\p{N}_'!?]*)*$`)

// leanFileCheck is one Lean file-mode check in progress: three sandboxed
// steps, each in a fresh directory, after the design of lean4checker and
// SafeVerify.
//
//  1. untrusted: `lake -d <project> env lean -o Proof.olean Proof.lean` on
//     header + proof. Only Proof.olean leaves the directory.
//  2. trusted: the same command on a generated Target.lean (header,
//     `namespace Warren_<nonce>`, `theorem target : (<statement>) :=
//     sorry`): the statement is elaborated with no proof code loaded.
//     Only Target.olean leaves.
//  3. trusted: the profile's warren-lean-check reads both oleans as data
//     (never imports them, so no proof code runs), replays every constant
//     of Proof.olean through the kernel on top of the header's imports,
//     compares the theorem's type with Warren_<nonce>.target's and collects
//     its axioms, and writes one JSON report to a nonce-named file.
//
// The verdict is read from that report only (lean_file_report.go), never
// from any step's output. Tested against testdata/lean-file-double; never
// run against real Lean here (TestLeanFileReal runs it where Lean exists).
type leanFileCheck struct {
	p     *Profile
	spec  *messages.VerifySpec
	run   RunFunc
	usage Usage
	n     string // nonce: the target's namespace and the report's file name
}

func (c *Checker) checkLeanFile(ctx context.Context, run RunFunc, p *Profile, spec *messages.VerifySpec) (*messages.Verdict, Usage, error) {
	if !leanName.MatchString(spec.Theorem) {
		return nil, Usage{}, &StatementError{Msg: fmt.Sprintf("theorem %q is not a dotted Lean identifier", spec.Theorem)}
	}
	// Defence in depth only: the kernel replay in step 3 is the guarantee.
	if v := leanUnsafeSource(spec.Proof); v != nil {
		return v, Usage{}, nil
	}
	if v := leanHostIO(p, spec.Proof); v != nil {
		return v, Usage{}, nil
	}
	// The sandbox sees host paths as they are, so a missing checker is this
	// host's fault, not the proof's: retry elsewhere.
	if _, err := os.Stat(p.Lean.Checker); err != nil {
		return nil, Usage{}, &InfraError{Step: "lean.checker", Err: err}
	}
	k := &leanFileCheck{p: p, spec: spec, run: run, n: nonce()}
	dir, cleanup, err := c.scratch("lean-")
	if err != nil {
		return nil, Usage{}, err
	}
	defer cleanup()
	v, err := k.check(ctx, dir)
	return v, k.usage, err
}

func (k *leanFileCheck) check(ctx context.Context, dir string) (*messages.Verdict, error) {
	proof, v, err := k.compileProof(ctx, filepath.Join(dir, "proof"))
	if v != nil || err != nil {
		return v, err
	}
	target, v, err := k.compileTarget(ctx, filepath.Join(dir, "target"))
	if v != nil || err != nil {
		return v, err
	}
	return k.audit(ctx, filepath.Join(dir, "audit"), proof, target)
}

// header is the task's header, else the profile's.
func (k *leanFileCheck) header() string { return cmp.Or(k.spec.Header, k.p.Lean.Header) }

// targetNamespace holds the trusted statement; the proof cannot guess it,
// so it cannot declare a constant of that name in its own module.
func (k *leanFileCheck) targetNamespace() string { return "Warren_" + k.n }

// reportFile is where warren-lean-check writes its report.
func (k *leanFileCheck) reportFile() string { return "warren_report_" + k.n + ".json" }

// leanArgv runs cmd under `lake -d <project> env`, which sets LEAN_PATH to
// the project's oleans.
func (k *leanFileCheck) leanArgv(cmd ...string) []string {
	return append([]string{k.p.Lean.Lake, "-d", k.p.Lean.Project, "env"}, cmd...)
}

// compileProof is step 1 (untrusted).
func (k *leanFileCheck) compileProof(ctx context.Context, dir string) ([]byte, *messages.Verdict, error) {
	src := k.spec.Proof
	if h := k.header(); h != "" {
		src = h + "\n" + src
	}
	if err := writeScratch(dir, map[string][]byte{"Proof.lean": []byte(src)}); err != nil {
		return nil, nil, err
	}
	out, v, err := runStep(ctx, k.run, k.p, &k.usage, sandbox.Spec{
		Argv: k.leanArgv("lean", "-o", "Proof.olean", "Proof.lean"), Scratch: dir})
	if v != nil || err != nil {
		return nil, v, err
	}
	if out.res.ExitCode != 0 {
		return nil, reject(messages.ReasonCompileError, out.output()), nil
	}
	olean, err := readResult(dir, "Proof.olean", k.p.Limits.FileSizeBytes)
	if err != nil {
		return nil, reject(messages.ReasonCompileError, "lean exited 0 but left no usable Proof.olean: "+err.Error()), nil
	}
	return olean, nil, nil
}

// targetSource is step 2's input: the header and the statement, nothing of
// the proof, so no notation, instance or macro of the proof can change
// what the statement means.
func (k *leanFileCheck) targetSource() string {
	src := fmt.Sprintf("namespace %s\ntheorem target : (\n%s\n) := sorry\nend %s\n", k.targetNamespace(), k.spec.Statement, k.targetNamespace())
	if h := k.header(); h != "" {
		src = h + "\n" + src
	}
	return src
}

// compileTarget is step 2 (trusted). The proof plays no part in it, so a
// failure is the task's (StatementError), not a rejection of the proof.
func (k *leanFileCheck) compileTarget(ctx context.Context, dir string) ([]byte, *messages.Verdict, error) {
	if err := writeScratch(dir, map[string][]byte{"Target.lean": []byte(k.targetSource())}); err != nil {
		return nil, nil, err
	}
	out, v, err := runStep(ctx, k.run, k.p, &k.usage, sandbox.Spec{
		Argv: k.leanArgv("lean", "-o", "Target.olean", "Target.lean"), Scratch: dir})
	switch {
	case err != nil:
		return nil, nil, err
	case v != nil && v.Reason == messages.ReasonSandboxError:
		return nil, v, nil
	case v != nil:
		return nil, nil, &StatementError{Msg: "the header and statement alone did not compile within the profile's limits (" + string(v.Reason) + "): " + v.Messages}
	case out.res.ExitCode != 0:
		return nil, nil, &StatementError{Msg: tail(out.output())}
	}
	olean, err := readResult(dir, "Target.olean", k.p.Limits.FileSizeBytes)
	if err != nil {
		return nil, nil, &InfraError{Step: "compile target", Err: err}
	}
	return olean, nil, nil
}

// audit is step 3 (trusted): warren-lean-check on both oleans in a
// directory neither compile step saw.
func (k *leanFileCheck) audit(ctx context.Context, dir string, proof, target []byte) (*messages.Verdict, error) {
	if err := writeScratch(dir, map[string][]byte{"Proof.olean": proof, "Target.olean": target}); err != nil {
		return nil, err
	}
	out, v, err := runStep(ctx, k.run, k.p, &k.usage, sandbox.Spec{
		Argv: k.leanArgv(k.p.Lean.Checker, "Proof.olean", "Target.olean",
			k.spec.Theorem, k.targetNamespace()+".target", k.reportFile()),
		Scratch: dir,
	})
	if v != nil || err != nil {
		return v, err
	}
	report, readErr := readResult(dir, k.reportFile(), maxLeanReport)
	return leanReportVerdict(k.p, k.spec.Theorem, out, report, readErr), nil
}
