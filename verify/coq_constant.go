package verify

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/warrenhq/warren/messages"
)

// locateShorter is how Locate ends a line naming a constant that is
// reachable by a shorter name.
var locateShorter = messages.NewLazyRegexp(`^ \(shorter name to refer to it in current context is [\p{L}_][\p{L}\p{N}_'.]*\)$`)

// notConstant reads step 2's `Locate Term` of the theorem's absolute name
// and returns why it is not a constant the proof declares, or "" when it
// is. Locate prints what the name denotes without elaborating anything;
// its output is parsed strictly (whitespace normalised, as Coq wraps long
// lines): exactly "Constant <absolute name>", optionally followed by the
// shorter-name remark. A notation, an inductive type, a constructor, a
// constant reached through a module alias or Include ("alias of"), or a
// missing name is refused.
func (k *coqCheck) notConstant(checkDir string) string {
	raw, err := readResult(checkDir, k.file("locate")+".out", 1<<20)
	if err != nil {
		return fmt.Sprintf("cannot tell what %s is (Locate left no output):\n%v", k.spec.Theorem, err)
	}
	out := strings.Join(strings.Fields(string(raw)), " ")
	want := "Constant " + k.ref()
	if rest, ok := strings.CutPrefix(out, want); ok && (rest == "" || locateShorter.MatchString(rest)) {
		return ""
	}
	what := "not a constant"
	switch first, _, _ := strings.Cut(out, " "); {
	case strings.Contains(out, "(alias of "):
		what = "a module alias or an Include of another constant, not a constant the proof declares"
	case first == "Notation":
		what = "a notation (an abbreviation), not a constant; the checker does not elaborate it"
	case first == "Inductive":
		what = "an inductive type, not a constant"
	case first == "Constructor":
		what = "a constructor, not a constant"
	case strings.HasPrefix(out, "No term of suffix"):
		what = "not declared by the proof (no term of that name)"
	}
	return fmt.Sprintf("the theorem %s is %s: Locate says %q", k.spec.Theorem, what, tail(out))
}

// declared lists the assumptions the proof declares under declared_axioms:
// reject: every axiom of the proof's library in coqchk's context summary
// (nested modules, functor applications, Declare Module, Variable or
// Hypothesis outside a section, Admitted helpers), and every axiom-like
// command of its source (functor bodies and module types hold
// declarations the kernel's summary never lists).
func (k *coqCheck) declared(sum *coqchkSummary) []string {
	var out []string
	prefix := k.lib() + ".Proof."
	for _, a := range sum.axioms {
		if strings.HasPrefix(a, prefix) && a != k.ref() {
			out = append(out, a)
		}
	}
	for _, f := range k.scan.declared {
		out = append(out, f.String())
	}
	return out
}

// coqCompileOutputs are the files step 1 may leave: its input and what
// coqc writes for it. .tmp is the sandbox's TMPDIR (native_compute and
// the OCaml toolchain write there); its contents are not read.
var coqCompileOutputs = []string{"Proof.v", "Proof.vo", "Proof.vok", "Proof.vos", "Proof.glob", ".Proof.aux", ".tmp"}

// unexpectedFiles lists the entries of dir (not descending) that are not
// in allowed.
func unexpectedFiles(dir string, allowed []string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &InfraError{Step: "list scratch", Err: err}
	}
	var extra []string
	for _, e := range entries {
		if !slices.Contains(allowed, e.Name()) {
			extra = append(extra, e.Name())
		}
	}
	return extra, nil
}
