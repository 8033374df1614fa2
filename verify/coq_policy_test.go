package verify

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

func TestScanCoq(t *testing.T) {
	t.Parallel()
	type want struct {
		hostIO, declared []string // "line: command"
	}
	tests := []struct {
		name, src string
		plugins   []string
		want      want
	}{
		{"plain proof", "Theorem t : True.\nProof. exact I. Qed.", nil, want{}},
		{"comment hides nothing", "(* Load \"x\". (* Redirect \"y\" Print nat. *) Cd \"/\". *) Check I.", nil, want{}},
		{"string in a comment holds a closer", "(* \"*)\" Load x. *) Check I.", nil, want{}},
		{"a closer inside a string in a comment does not end it", "(* \"*)\" *) Load x.", nil, want{hostIO: []string{"1: Load"}}},
		{"string hides nothing", "Definition s := \"Load \"\"x\"\". Axiom a : False.\".", nil, want{}},
		{"command after a string with escapes", "Definition s := \"a\"\"b\". Load x.", nil, want{hostIO: []string{"1: Load"}}},
		{"same line as the proof", "Theorem t : True. Proof. exact I. Qed. Redirect \"f\" Print nat.", nil, want{hostIO: []string{"1: Redirect"}}},
		{"no blank after the dot", "Qed.(* c *)Load \"x\".", nil, want{hostIO: []string{"1: Load"}}},
		{"attributes and locality", "#[local, warnings=\"-all\"] Local Global Load \"x\".", nil, want{hostIO: []string{"1: Load"}}},
		{"control prefixes", "Time Fail Succeed Redirect \"x\" Print Universes \"u\".", nil, want{hostIO: []string{"1: Redirect", "1: Print Universes"}}},
		{"timeout carries a command", "Timeout 10 Load \"x\".", nil, want{hostIO: []string{"1: Timeout", "1: Load"}}},
		{"bullets, braces, selectors", "Proof.\n- { * Cd \"/tmp\". }\n2: { Drop. }\nall: Load x.\n[H]: Add LoadPath \"/\" as X.", nil,
			want{hostIO: []string{"2: Cd", "3: Drop", "4: Load", "5: Add LoadPath"}}},
		{"load paths", "Add Rec LoadPath \"/\" as X. Remove LoadPath \"/\". Add ML Path \"/\".", nil,
			want{hostIO: []string{"1: Add Rec LoadPath", "1: Remove LoadPath", "1: Add ML Path"}}},
		{"extraction", "Require Extraction. Extraction \"f.ml\" nat. Separate Extraction nat. Recursive Extraction Library Datatypes. Set Extraction Output Directory \"/\".", nil,
			want{hostIO: []string{"1: Extraction", "1: Separate Extraction", "1: Recursive Extraction", "1: Set Extraction"}}},
		{"printing universes to stdout is fine", "Print Universes. Print Sorted Universes \"f\".", nil, want{hostIO: []string{"1: Print Sorted Universes"}}},
		{"plugins", "Declare ML Module \"ok\" \"evil\".", []string{"ok"}, want{hostIO: []string{"1: Declare ML Module \"evil\""}}},
		{"axioms anywhere", "Module M. Module Type T. Parameter p : nat. End T.\n#[local] Axiom (a : False) (b : 0 = 1).\nEnd M. Declare Module X : Typ. Conjectures c d : False.", nil,
			want{declared: []string{"1: Parameter", "2: Axiom", "3: Declare Module", "3: Conjectures"}}},
		{"section assumptions are discharged, others are axioms", "Section S. Variable A : Type. Context (x : A). Hypothesis h : A = A. End S.\n" +
			"Module Type T. Hypothesis h : False. End T.\nModule F (X : T). Variables a b : nat. End F.\nModule G := F.\nContext (c : nat).\nSection S2. Module Type U. End U. Context (d : nat). End S2.", nil,
			want{declared: []string{"2: Hypothesis", "3: Variables", "5: Context"}}},
		{"unterminated comment", "Check I. (* Load x.", nil, want{}},
		{"unicode", "Definition λ := 0.\u00a0Load x.", nil, want{hostIO: []string{"1: Load"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := scanCoq(tc.src, tc.plugins)
			got := func(fs []coqFinding) []string {
				var out []string
				for _, f := range fs {
					out = append(out, strings.Join([]string{itoa(f.line), f.command}, ": "))
				}
				return out
			}
			require.Equal(t, tc.want.hostIO, got(s.hostIO), "host I/O")
			require.Equal(t, tc.want.declared, got(s.declared), "declared axioms")
		})
	}
}

func TestDeclaredNames(t *testing.T) {
	t.Parallel()
	s := scanCoq("Axiom a b : False. Parameters (p : nat) (q r : bool).", nil)
	require.Len(t, s.declared, 2)
	require.Contains(t, s.declared[0].why, "a, b")
	require.Contains(t, s.declared[1].why, "p, q, r")
}

func itoa(n int) string { return strconv.Itoa(n) }

// FuzzScanCoq: the scan never panics, and text inside a comment never
// yields a finding.
func FuzzScanCoq(f *testing.F) {
	for _, s := range []string{"Load x.", "(* \"*)\" *) Redirect \"a\"\"b\" Print nat.", "#[local] Axiom a : False.", "- { 1: Cd \"x\". }"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s := scanCoq(src, nil)
		_ = findingsText(s.hostIO)
		if !strings.Contains(src, "*)") && !strings.Contains(src, "\"") {
			c := scanCoq("(* "+src+" *)", nil)
			require.Empty(t, c.hostIO)
			require.Empty(t, c.declared)
		}
	})
}

// teeRun records every step's argv and stdout.
type teeRun struct {
	run  RunFunc
	mu   sync.Mutex
	outs []string
}

func (r *teeRun) Run(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
	var b strings.Builder
	s.Stdout = io.MultiWriter(s.Stdout, &b)
	res, err := r.run(ctx, s)
	r.mu.Lock()
	r.outs = append(r.outs, b.String())
	r.mu.Unlock()
	return res, err
}

// TestCoqTrustedStepRunsNoProofCode: a theorem that is an ltac:(...)
// abbreviation, a proof that leaves Program Mode and an obligation tactic
// on for its importers, or one whose global coercion needs a typeclass
// instance found by its own Hint Extern (the control in the proof shows
// the coercion applies where the expected type is the statement itself;
// step 2 checks against warren_expected_<nonce>, a constant no coercion
// can target), is refused without the trusted step running
// the proof's tactic (the tactic prints a marker; only the untrusted
// compile may print it, and there it is never run). Without the guard, or
// without the Unset Program Mode, each is run in step 2 (and the second
// accepted).
func TestCoqTrustedStepRunsNoProofCode(t *testing.T) {
	requireCoq(t)
	sb := testRunner(t)
	c := newTestChecker(t)
	tests := []struct{ name, theorem, statement, proof, msg string }{
		{"ltac notation", "add_zero", "forall n : nat, n + 0 = n",
			`Notation add_zero := ltac:(idtac "MARKER-TACTIC-RAN"; exact (fun n : nat => eq_sym (plus_n_O n))) (only parsing).`, "is a notation"},
		{"program mode obligations", "six", "{n : nat | n = 6}",
			"Require Coq.Program.Tactics.\nGlobal Set Program Mode.\n#[global] Obligation Tactic := idtac \"MARKER-TACTIC-RAN\"; reflexivity.\nDefinition six : nat := 6.",
			"does not have the expected type"},
		{"coercion found by a proof hint", "six", "{n : nat | n = 6}",
			"Class Sixer : Type := sixer : nat -> {m : nat | m = 6}.\nDefinition to6 {H : Sixer} (n : nat) : {m : nat | m = 6} := sixer n.\n" +
				"#[global] Coercion to6 : nat >-> sig.\n#[global] Hint Extern 1 Sixer => idtac \"MARKER-TACTIC-RAN\"; exact (fun _ => exist _ 6 eq_refl) : typeclass_instances.\n" +
				"Definition six : nat := 6.\nDefinition control : {m : nat | m = 6} := six.",
			"does not have the expected type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := &teeRun{run: sb.run}
			spec := &messages.VerifySpec{Theorem: tc.theorem, Statement: tc.statement, Proof: tc.proof}
			v, _, err := c.Check(context.Background(), tr.Run, testProfiles(t).Get("coq-used-only"), spec)
			require.NoError(t, err)
			require.Equal(t, messages.ReasonStatementMismatch, v.Reason, v.Messages)
			require.Contains(t, v.Messages, tc.msg)
			require.GreaterOrEqual(t, len(tr.outs), 2)
			for i, out := range tr.outs[1:] { // step 1 is the untrusted compile: it may run anything
				require.NotContains(t, out, "MARKER-TACTIC-RAN", "step %d ran the proof's tactic", i+2)
			}
		})
	}
}

// TestCoqCompileWritesNoExtraFiles is the defence in depth behind the
// scan: with the scan blind (as if it missed a command), a compile that
// writes a file beside its outputs is still rejected.
func TestCoqCompileWritesNoExtraFiles(t *testing.T) {
	requireCoq(t)
	sb := testRunner(t)
	c := newTestChecker(t)
	p := testProfiles(t).Get("coq")
	spec := &messages.VerifySpec{Theorem: "t", Statement: "True",
		Proof: "Redirect \"leak\" Print nat.\nTheorem t : True. Proof. exact I. Qed."}
	k := &coqCheck{p: p, spec: spec, run: sb.run, n: nonce(), scan: &coqScan{}}
	dir, cleanup, err := c.scratch("coq-")
	require.NoError(t, err)
	t.Cleanup(cleanup)
	v, err := k.check(context.Background(), dir)
	require.NoError(t, err)
	require.Equal(t, messages.ReasonDisallowedCommand, v.Reason, v.Messages)
	require.Contains(t, v.Messages, "leak.out")
	_, err = os.Stat(filepath.Join(dir, "compile", "leak.out"))
	require.NoError(t, err, "the control: the file was written")
}
