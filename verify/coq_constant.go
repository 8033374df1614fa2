package verify

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/verify/coqpolicy"
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
// besides the theorem (nested modules, functor applications, Declare
// Module, Variable or Hypothesis outside a section, Admitted helpers),
// each with the line of the declaration it comes from when the policy
// plugin saw one, and every assumption the plugin saw declared where the
// summary never lists it (a functor body that is never applied).
func (k *coqCheck) declared(sum *coqchkSummary) []string {
	var out []string
	prefix := k.lib() + ".Proof."
	seen := map[string]bool{}
	for _, a := range sum.axioms {
		if !strings.HasPrefix(a, prefix) || a == k.ref() {
			continue
		}
		if rec := k.declaredBy(strings.Split(strings.TrimPrefix(a, prefix), ".")); rec != nil {
			seen[recordKey(rec)] = true
		}
		out = append(out, k.describeAxiom(a))
	}
	for i := range k.reading.Declared {
		if rec := &k.reading.Declared[i]; !seen[recordKey(rec)] {
			out = append(out, rec.Describe(k.lineOf))
		}
	}
	return out
}

// describeAxiom names a fully qualified axiom and, when the proof declares
// it, the line and command it comes from.
func (k *coqCheck) describeAxiom(full string) string {
	rest, ok := strings.CutPrefix(full, k.lib()+".Proof.")
	if !ok {
		return full
	}
	if rec := k.declaredBy(strings.Split(rest, ".")); rec != nil {
		return fmt.Sprintf("%s (%s)", full, rec.Describe(k.lineOf))
	}
	return full
}

// declaredBy finds the record an axiom's path (below the proof's library)
// comes from: an assumption of its name, else a Declare Module (in a
// functor or not) of one of its modules, else the Admitted, Admit
// Obligations or Include it comes from. It only names a line: the verdict is the summary's.
func (k *coqCheck) declaredBy(path []string) *coqpolicy.Record {
	name := path[len(path)-1]
	for i := range k.reading.Declared {
		if slices.Contains(k.reading.Declared[i].Names, name) {
			return &k.reading.Declared[i]
		}
	}
	for _, recs := range [][]coqpolicy.Record{k.reading.Modules, k.reading.Declared} {
		for i := range recs {
			for _, m := range path[:len(path)-1] {
				if slices.Contains(recs[i].Names, m) {
					return &recs[i]
				}
			}
		}
	}
	for i := range k.reading.Origins {
		if slices.Contains(k.reading.Origins[i].Names, name) {
			return &k.reading.Origins[i]
		}
	}
	if obligation.MatchString(name) {
		for i := range k.reading.Origins {
			if k.reading.Origins[i].Command == "Admit Obligations" {
				return &k.reading.Origins[i]
			}
		}
	}
	return nil
}

// obligation matches the name Program gives an obligation.
var obligation = messages.NewLazyRegexp(`_obligation_[0-9]+$`)

func recordKey(r *coqpolicy.Record) string {
	return fmt.Sprintf("%d %s %v", r.Line, r.Command, r.Names)
}

// compileOutputs are the regular files step 1 may leave in its directory,
// by path relative to it: its input, what coqc -noglob writes for it, the
// plugin's records, the caches of lia, nia, nra and psatz, and what
// psatz's solver leaves (csdpcert's copy of its problem, trace, and
// CSDP's parameters in TMPDIR); all fresh per check and never read back.
// Nothing else may be in its .tmp and .shm (the sandbox's /tmp and
// /dev/shm).
func (k *coqCheck) compileOutputs() []string {
	out := []string{"Proof.v", "Proof.vo", "Proof.vok", "Proof.vos", ".Proof.aux",
		".lia.cache", ".nia.cache", ".nra.cache", ".csdp.cache", "trace", filepath.Join(".tmp", "param.csdp")}
	if !k.blind {
		out = append(out, k.policyRecords())
	}
	return out
}

// compileDirs are the directories the compile's sandbox gets (TMPDIR and
// /dev/shm): they may exist, empty.
var compileDirs = []string{".tmp", ".shm"}

// unexpectedFiles lists, by path relative to dir, everything under dir
// that is not one of the regular files allowed (by relative path) or one of the
// empty directories dirs: a file of another name or kind, anything inside
// dirs, any other directory (and what it holds).
func unexpectedFiles(dir string, allowed []string) ([]string, error) {
	var extra []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		top := !strings.Contains(rel, string(filepath.Separator))
		switch {
		case d.Type().IsRegular() && slices.Contains(allowed, rel):
		case top && d.IsDir() && slices.Contains(compileDirs, rel):
		default:
			if d.IsDir() {
				rel += "/"
			}
			extra = append(extra, rel)
		}
		return nil
	})
	if err != nil {
		return nil, &InfraError{Step: "list scratch", Err: err}
	}
	return extra, nil
}
