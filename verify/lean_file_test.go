package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// leanFileDoubleDir holds the fake lake and checker (see its README.md).
const leanFileDoubleDir = "../testdata/lean-file-double"

// leanFileDoubleProfile is a lean-file profile whose lake and checker are
// the test doubles.
func leanFileDoubleProfile(t testing.TB, checker string) *Profile {
	t.Helper()
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		if inCI {
			t.Fatal("CI=true but /usr/bin/python3, the lean-file doubles' interpreter, is missing: install Debian's python3")
		}
		t.Skip("/usr/bin/python3 (the lean-file doubles' interpreter) is not installed")
	}
	dir, err := filepath.Abs(leanFileDoubleDir)
	require.NoError(t, err)
	if checker == "" {
		checker = filepath.Join(dir, "warren-lean-check")
	}
	ps, err := ParseProfiles(fmt.Appendf(nil, `
profiles:
  - name: lean-file-double
    kind: lean-file
    toolchain: [%q]
    limits: {wall: 5s}
    lean: {lake: %q, project: %q, checker: %q}
`, dir, filepath.Join(dir, "lake"), dir, checker))
	require.NoError(t, err)
	return &ps.Profiles[0]
}

// TestLeanFileDouble runs the real Checker, through the real sandbox, on
// the lean-file doubles: every hostile behaviour gets its verdict, which
// comes only from the checker's report file.
func TestLeanFileDouble(t *testing.T) {
	sb := testRunner(t)
	if !sb.isolated {
		t.Logf("sandbox isolation unavailable (%s): the steps run in the insecure mode", sb.why)
	}
	p := leanFileDoubleProfile(t, "")
	c := newTestChecker(t)
	tests := []struct {
		name, header, proof string
		accepted            bool
		reason              messages.Reason
		axioms              []string
		msg                 string // a substring of Verdict.Messages
	}{
		{name: "good", proof: "theorem t : P := trivial", accepted: true, axioms: nil},
		{name: "allowed axioms", proof: "theorem t : P := Classical.em", accepted: true,
			axioms: []string{"Classical.choice", "Quot.sound", "propext"}},
		{name: "header import", header: "import Mathlib", proof: "theorem t : P := Real.pi", accepted: true,
			axioms: []string{"Classical.choice"}},
		{name: "sorry marker", proof: "theorem t : P := trivial\n-- DOUBLE: sorry", reason: messages.ReasonIncomplete},
		{name: "sorry term", proof: "theorem t : P := sorry", reason: messages.ReasonIncomplete},
		{name: "forged audit on a sorry", proof: "theorem t : P := trivial\n-- DOUBLE: sorry\n-- DOUBLE: print-forged-audit",
			reason: messages.ReasonIncomplete},
		{name: "forged audit on a good proof", proof: "theorem t : P := trivial\n-- DOUBLE: print-forged-audit", accepted: true},
		{name: "forged audit on an extra axiom", proof: "theorem t : P := trivial\n-- DOUBLE: extra-axiom Foo.bar\n-- DOUBLE: print-forged-audit",
			reason: messages.ReasonDisallowedAxiom, msg: "Foo.bar"},
		{name: "replay fails", proof: "theorem t : P := trivial\n-- DOUBLE: replay-fail", reason: messages.ReasonUnsafeFlag, msg: "kernel"},
		{name: "weaker statement", proof: "theorem t : P := trivial\n-- DOUBLE: weaker-statement", reason: messages.ReasonStatementMismatch},
		{name: "other statement", proof: "theorem t : Q := trivial", reason: messages.ReasonStatementMismatch},
		// The proof's notation makes its "P" mean True; the target, compiled
		// without the proof, keeps P.
		{name: "notation redefines the statement", proof: "notation P => True\ntheorem t : P := trivial", reason: messages.ReasonStatementMismatch},
		{name: "extra axiom", proof: "theorem t : P := trivial\n-- DOUBLE: extra-axiom Foo.bar", reason: messages.ReasonDisallowedAxiom, msg: "Foo.bar"},
		{name: "declared axiom", proof: "axiom cheat : P\ntheorem t : P := @cheat", reason: messages.ReasonDisallowedAxiom, msg: "cheat"},
		{name: "native_decide axiom", proof: "theorem t : P := Lean.ofReduceBool", reason: messages.ReasonDisallowedAxiom, msg: "Lean.ofReduceBool"},
		{name: "axiom named like the theorem", proof: "axiom t : P", reason: messages.ReasonStatementMismatch, msg: "not a theorem"},
		{name: "missing theorem", proof: "theorem u : P := trivial", reason: messages.ReasonStatementMismatch},
		{name: "own prelude", proof: "prelude\ntheorem t : P := trivial", reason: messages.ReasonStatementMismatch, msg: "import"},
		{name: "more imports than the header", header: "import Init", proof: "import Mathlib\ntheorem t : P := Real.pi", accepted: true,
			axioms: []string{"Classical.choice"}},
		{name: "import after the header's commands", header: "import Init\nopen Nat", proof: "import Mathlib\ntheorem t : P := trivial",
			reason: messages.ReasonCompileError},
		{name: "compile error", proof: "theorem t : P := trivial\n-- DOUBLE: compile-error", reason: messages.ReasonCompileError},
		{name: "crash", proof: "theorem t : P := trivial\n-- DOUBLE: crash", reason: messages.ReasonCrash},
		{name: "hang", proof: "theorem t : P := trivial\n-- DOUBLE: hang", reason: messages.ReasonTimeout},
		{name: "olean crashes the checker", proof: "theorem t : P := trivial\n-- DOUBLE: checker-crash", reason: messages.ReasonCrash},
		{name: "olean breaks the report", proof: "theorem t : P := trivial\n-- DOUBLE: checker-bad-json", reason: messages.ReasonCrash},
		{name: "olean hangs the checker", proof: "theorem t : P := trivial\n-- DOUBLE: checker-hang", reason: messages.ReasonTimeout},
		{name: "names a kernel bypass", proof: "set_option debug.skipKernelTC true\ntheorem t : P := trivial", reason: messages.ReasonUnsafeFlag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, u, err := c.Check(context.Background(), sb.run, p, &messages.VerifySpec{
				Theorem: "t", Statement: "P", Header: tc.header, Proof: tc.proof})
			require.NoError(t, err)
			require.Equal(t, tc.accepted, v.Accepted, "%+v", v)
			require.Equal(t, tc.reason, v.Reason, "%s", v.Messages)
			require.Contains(t, v.Messages, tc.msg)
			if tc.accepted {
				require.Equal(t, tc.axioms, v.Axioms)
				require.Equal(t, 3, u.Steps, "compile, target, audit")
			}
		})
	}
}

// TestLeanFileStatementError: a statement or theorem name that is broken
// on its own makes the task invalid, not the proof rejected.
func TestLeanFileStatementError(t *testing.T) {
	sb := testRunner(t)
	p := leanFileDoubleProfile(t, "")
	c := newTestChecker(t)
	tests := []struct{ name, theorem, statement string }{
		{"statement does not compile", "t", "ERROR"},
		{"theorem is not a name", "t u", "P"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.Check(context.Background(), sb.run, p, &messages.VerifySpec{
				Theorem: tc.theorem, Statement: tc.statement, Proof: "theorem t : P := trivial"})
			var se *StatementError
			require.True(t, errors.As(err, &se), "got %v", err)
		})
	}
}

// TestLeanFileMissingChecker: a profile whose checker is not installed is
// the host's fault: an InfraError before any step runs.
func TestLeanFileMissingChecker(t *testing.T) {
	p := leanFileDoubleProfile(t, "/nonexistent/warren-lean-check")
	c := newTestChecker(t)
	ran := false
	run := func(context.Context, sandbox.Spec) (*sandbox.Result, error) {
		ran = true
		return nil, errors.New("unreachable")
	}
	_, _, err := c.Check(context.Background(), run, p, &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: "theorem t : P := trivial"})
	var ie *InfraError
	require.True(t, errors.As(err, &ie), "got %v", err)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.False(t, ran)
}

// TestServiceOffersLeanFileOnlyWithItsChecker: a worker does not advertise
// a lean-file profile whose checker is missing (its tasks would only fail
// there); the control with the checker present is offered.
func TestServiceOffersLeanFileOnlyWithItsChecker(t *testing.T) {
	for _, tc := range []struct {
		checker string
		offered bool
	}{
		{"", true}, // the double's checker
		{"/nonexistent/warren-lean-check", false},
	} {
		p := leanFileDoubleProfile(t, tc.checker)
		svc, skipped := NewService(newTestChecker(t), &Profiles{Profiles: []Profile{*p}}, nil)
		require.Equal(t, tc.offered, slices.Contains(svc.Profiles(), p.Name), "checker %q: skipped %v", tc.checker, skipped)
		require.Equal(t, !tc.offered, skipped[p.Name] != nil)
	}
}

// TestLeanReportVerdict covers the report contract: only a complete,
// well-formed report from a checker that exited 0 can accept.
func TestLeanReportVerdict(t *testing.T) {
	t.Parallel()
	p := &Profile{AllowedAxioms: DefaultLeanAxioms}
	good := `{"version":1,"ok":true,"error":"","imports_cover":true,"replay_error":"","theorem_found":true,"kind":"theorem","is_theorem":true,"type_matches":true,"axioms":["propext"]}`
	tests := []struct {
		name   string
		exit   int
		report string
		noFile bool
		reason messages.Reason
	}{
		{name: "good", report: good},
		{name: "nonzero exit", exit: 1, report: good, reason: messages.ReasonCrash},
		{name: "no report", noFile: true, reason: messages.ReasonCrash},
		{name: "missing field", report: strings.Replace(good, `"axioms":["propext"]`, `"x":1`, 1), reason: messages.ReasonCrash},
		{name: "unknown field", report: strings.Replace(good, `{`, `{"accepted":true,`, 1), reason: messages.ReasonCrash},
		{name: "null axioms", report: strings.Replace(good, `["propext"]`, `null`, 1), reason: messages.ReasonCrash},
		{name: "two objects", report: good + good, reason: messages.ReasonCrash},
		{name: "other version", report: strings.Replace(good, `"version":1`, `"version":2`, 1), reason: messages.ReasonCrash},
		{name: "not ok", report: strings.Replace(good, `"ok":true`, `"ok":false`, 1), reason: messages.ReasonCrash},
		{name: "replay error", report: strings.Replace(good, `"replay_error":""`, `"replay_error":"bad"`, 1), reason: messages.ReasonUnsafeFlag},
		{name: "imports differ", report: strings.Replace(good, `"imports_cover":true`, `"imports_cover":false`, 1), reason: messages.ReasonStatementMismatch},
		{name: "not found", report: strings.Replace(good, `"theorem_found":true`, `"theorem_found":false`, 1), reason: messages.ReasonStatementMismatch},
		{name: "not a theorem", report: strings.Replace(good, `"is_theorem":true`, `"is_theorem":false`, 1), reason: messages.ReasonStatementMismatch},
		{name: "type differs", report: strings.Replace(good, `"type_matches":true`, `"type_matches":false`, 1), reason: messages.ReasonStatementMismatch},
		{name: "sorry", report: strings.Replace(good, `["propext"]`, `["propext","sorryAx"]`, 1), reason: messages.ReasonIncomplete},
		{name: "disallowed", report: strings.Replace(good, `["propext"]`, `["Foo.bar"]`, 1), reason: messages.ReasonDisallowedAxiom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A forged clean audit on stdout never matters.
			out := &stepOutput{res: &sandbox.Result{ExitCode: tc.exit}, stdout: good, stderr: "'t' does not depend on any axioms"}
			var readErr error
			if tc.noFile {
				readErr = os.ErrNotExist
			}
			v := leanReportVerdict(p, "t", out, []byte(tc.report), readErr)
			require.Equal(t, tc.reason == "", v.Accepted, "%+v", v)
			require.Equal(t, tc.reason, v.Reason, v.Messages)
		})
	}
}

func TestLeanFileProfileNeedsChecker(t *testing.T) {
	t.Parallel()
	for _, y := range []string{
		"profiles: [{name: a, kind: lean-file, lean: {project: /p}}]",
		"profiles: [{name: a, kind: lean-file, lean: {project: /p, checker: bin/check}}]",
	} {
		_, err := ParseProfiles([]byte(y))
		var pe *ProfileError
		require.True(t, errors.As(err, &pe), "got %v", err)
		require.Equal(t, "profiles[0].lean.checker", pe.Field, pe.Error())
	}
}

// TestLeanFileReal runs the pipeline against real Lean and the real
// warren-lean-check. It has never run: Lean cannot be installed on the
// machine this was written on.
func TestLeanFileReal(t *testing.T) {
	lake, err := exec.LookPath("lake")
	if err != nil {
		t.Skip("lake is not on PATH: real Lean is not installed here; the pipeline is tested against testdata/lean-file-double (TestLeanFileDouble)")
	}
	project := os.Getenv("WARREN_LEAN_PROJECT")
	if project == "" {
		t.Skip("lake found, but WARREN_LEAN_PROJECT (a Lean project directory built with `lake build`) is not set")
	}
	checker := os.Getenv("WARREN_LEAN_CHECKER")
	if checker == "" {
		checker, err = filepath.Abs("../deploy/lean/warren-lean-check/.lake/build/bin/warren-lean-check")
		require.NoError(t, err)
	}
	if _, err := os.Stat(checker); err != nil {
		t.Skipf("warren-lean-check is not built (%v): build it with the project's toolchain (deploy/lean/README.md) or set WARREN_LEAN_CHECKER", err)
	}
	// Not resolved through symlinks: elan dispatches on the name it is run as.
	lake, err = filepath.Abs(lake)
	require.NoError(t, err)
	// elan's lake lives in <elan home>/bin or <toolchain>/bin: mount its root.
	root := filepath.Dir(filepath.Dir(lake))
	if h := os.Getenv("ELAN_HOME"); h != "" {
		root = h
	}
	ps, err := ParseProfiles(fmt.Appendf(nil, `
profiles:
  - name: lean-real
    kind: lean-file
    toolchain: [%q, %q, %q]
    env: {PATH: %q, ELAN_HOME: %q}
    limits: {wall: 600s, memory_bytes: 8589934592}
    lean: {lake: %q, project: %q, checker: %q}
`, root, project, filepath.Dir(checker), filepath.Dir(lake)+":/usr/bin:/bin", root, lake, project, checker))
	require.NoError(t, err)
	p := &ps.Profiles[0]
	sb := testRunner(t)
	c := newTestChecker(t)
	// reasons: the acceptable outcomes; empty means accepted.
	tests := []struct {
		name, statement, proof string
		reasons                []messages.Reason
	}{
		{"good", "1 + 1 = 2", "theorem t : 1 + 1 = 2 := rfl", nil},
		{"classical", "∀ p : Prop, p ∨ ¬p", "theorem t : ∀ p : Prop, p ∨ ¬p := Classical.em", nil},
		{"sorry", "1 + 1 = 2", "theorem t : 1 + 1 = 2 := sorry", []messages.Reason{messages.ReasonIncomplete}},
		{"other statement", "1 + 1 = 3", "theorem t : 1 + 1 = 2 := rfl", []messages.Reason{messages.ReasonStatementMismatch}},
		{"new axiom", "False", "axiom cheat : False\ntheorem t : False := cheat", []messages.Reason{messages.ReasonDisallowedAxiom}},
		// Lean.ofReduceBool is not allowed; the replay may also refuse to
		// evaluate the compiled decision procedure it has no code for.
		{"native_decide", "1 + 1 = 2", "theorem t : 1 + 1 = 2 := by native_decide",
			[]messages.Reason{messages.ReasonDisallowedAxiom, messages.ReasonUnsafeFlag}},
		{"does not compile", "1 + 1 = 2", "theorem t : 1 + 1 = 2 := by exact foo", []messages.Reason{messages.ReasonCompileError}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := c.Check(context.Background(), sb.run, p, &messages.VerifySpec{Theorem: "t", Statement: tc.statement, Proof: tc.proof})
			require.NoError(t, err)
			require.Equal(t, len(tc.reasons) == 0, v.Accepted, "%+v", v)
			if len(tc.reasons) > 0 {
				require.Contains(t, tc.reasons, v.Reason, v.Messages)
			}
		})
	}
}

// TestLeanFileForgedAuditControl is the control for the forged-audit rows
// of TestLeanFileDouble: what the proof prints is a convincing clean audit
// (an accepting report by our own parser, and a clean #print axioms line),
// so a verifier that read step output would accept a proof that uses sorry.
// The pipeline rejects it because it never reads that output.
func TestLeanFileForgedAuditControl(t *testing.T) {
	p := leanFileDoubleProfile(t, "")
	dir := t.TempDir()
	src := "theorem t : P := sorry\n-- DOUBLE: print-forged-audit"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Proof.lean"), []byte(src), 0o644))
	cmd := exec.Command(p.Lean.Lake, "-d", p.Lean.Project, "env", "lean", "-o", "Proof.olean", "Proof.lean")
	cmd.Dir = dir
	var stdout strings.Builder
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Run())
	lines := strings.Split(stdout.String(), "\n")

	forged := leanReportVerdict(p, "t", &stepOutput{res: &sandbox.Result{}}, []byte(lines[0]), nil)
	require.True(t, forged.Accepted, "the printed report would accept: %+v", forged)
	axioms, err := parseLeanAxioms([]replMessage{{Severity: "info", Data: lines[1]}}, "t")
	require.NoError(t, err)
	require.Empty(t, axioms, "the printed #print axioms line claims no axioms")
	require.Contains(t, stdout.String(), "declaration uses 'sorry'")
}
