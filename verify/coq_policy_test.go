package verify

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

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

// blindCheck runs a check with the policy plugin off (as if it missed a
// command): what stands behind it then decides.
func blindCheck(t *testing.T, c *Checker, run RunFunc, p *Profile, spec *messages.VerifySpec) (*messages.Verdict, string) {
	t.Helper()
	host, err := c.coqHost(context.Background(), p)
	require.NoError(t, err)
	k := &coqCheck{p: p, spec: spec, run: run, host: host, n: nonce(), blind: true}
	dir, err := os.MkdirTemp(c.cfg.ScratchRoot, "coq-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	v, err := k.check(context.Background(), dir)
	require.NoError(t, err)
	return v, filepath.Join(dir, "compile")
}

// TestCoqCompileWritesNoExtraFiles is the check behind the plugin: with
// the plugin blind, a compile that writes anything besides its outputs,
// anywhere it can write (its directory, a subdirectory, its /tmp and
// /dev/shm, a file named like an output coqc does not write under
// -noglob), is rejected naming the path; the control shows each write
// happened.
func TestCoqCompileWritesNoExtraFiles(t *testing.T) {
	requireCoq(t)
	sb := testRunner(t)
	c := newTestChecker(t)
	p := testProfiles(t).Get("coq")
	const thm = "\nTheorem t : True. Proof. exact I. Qed."
	tests := []struct{ name, proof, path string }{
		{"its directory", `Redirect "leak" Print nat.`, "leak.out"},
		{"named like an output", `Print Universes "Proof.glob".`, "Proof.glob"},
		{"its TMPDIR", `Redirect ".tmp/leak" Print nat.`, ".tmp/leak.out"},
		{"its /tmp", `Redirect "/tmp/leak" Print nat.`, ".tmp/leak.out"},
		{"its /dev/shm", `Redirect "/dev/shm/leak" Print nat.`, ".shm/leak.out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := &messages.VerifySpec{Theorem: "t", Statement: "True", Proof: tc.proof + thm}
			v, dir := blindCheck(t, c, sb.run, p, spec)
			if strings.HasPrefix(tc.proof, `Redirect "/`) && v.Reason == messages.ReasonCompileError {
				// Landlock-only mode: /tmp and /dev/shm are not writable at all.
				require.Contains(t, v.Messages, "ermission denied")
				return
			}
			require.Equal(t, messages.ReasonDisallowedCommand, v.Reason, v.Messages)
			require.Contains(t, v.Messages, tc.path)
			_, err := os.Stat(filepath.Join(dir, tc.path))
			require.NoError(t, err, "the control: the file was written")
		})
	}
}

// TestCoqCompileSeesNoStdlibSource: the untrusted compile reads the
// stdlib's compiled libraries only. With the plugin blind, a Load of a
// stdlib source fails in the sandbox; the control loads the same file
// with plain coqc on the host and compiles.
func TestCoqCompileSeesNoStdlibSource(t *testing.T) {
	requireCoq(t)
	sb := testRunner(t)
	if !sb.isolated {
		t.Skipf("the hidden stdlib is the sandbox's: isolation unavailable here (%s)", sb.why)
	}
	c := newTestChecker(t)
	p := testProfiles(t).Get("coq")
	host, err := c.coqHost(context.Background(), p)
	require.NoError(t, err)
	for _, load := range []string{`Load "` + filepath.Join(host.coqlib, "theories", "Logic", "Decidable.v") + `".`, `Load Decidable.`} {
		proof := load + "\nTheorem t : True. Proof. exact I. Qed.\n"
		v, _ := blindCheck(t, c, sb.run, p, &messages.VerifySpec{Theorem: "t", Statement: "True", Proof: proof})
		require.Equal(t, messages.ReasonCompileError, v.Reason, v.Messages)
		require.Contains(t, v.Messages, "Can't find file")

		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "Proof.v"), []byte(proof), 0o644))
		cmd := exec.Command(p.Coq.Coqc, "-q", "-noglob", "Proof.v")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the control: %s", out)
	}
}
