package verify

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// doubleProfile is a lean-repl profile whose REPL is the protocol test
// double in testdata/lean-repl-double.
func doubleProfile(t testing.TB, size, maxRequests int) *Profile {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 (the REPL test double's interpreter) is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "lean-repl-double"))
	require.NoError(t, err)
	ps, err := ParseProfiles(fmt.Appendf(nil, `
profiles:
  - name: lean-double
    kind: lean-repl
    toolchain: [%q]
    limits: {wall: 3s}
    lean: {project: %q, repl_argv: [/usr/bin/python3, %q], header: "import Mathlib\naxiom propext : X"}
    pool: {size: %d, max_requests: %d}
`, dir, dir, filepath.Join(dir, "repl.py"), size, maxRequests))
	require.NoError(t, err)
	return &ps.Profiles[0]
}

// countingRun counts sandbox runs, i.e. REPL processes started.
func countingRun(run RunFunc, n *atomic.Int64) RunFunc {
	return func(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
		n.Add(1)
		return run(ctx, s)
	}
}

func TestReplPoolVerdicts(t *testing.T) {
	sb := testRunner(t)
	p := doubleProfile(t, 2, 100)
	var starts atomic.Int64
	pool, err := NewReplPool(context.Background(), countingRun(sb.run, &starts), p, testLogger())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.EqualValues(t, 2, starts.Load(), "pre-warmed")

	tests := []struct {
		name, proof, statement string
		accepted               bool
		reason                 messages.Reason
	}{
		{"good", "theorem t : P := trivial", "P", true, ""},
		{"allowed axiom from the header", "theorem t : P := propext", "P", true, ""},
		{"sorry", "theorem t : P := sorry", "P", false, messages.ReasonIncomplete},
		{"new axiom", "axiom cheat : P\ntheorem t : P := @cheat", "P", false, messages.ReasonDisallowedAxiom},
		{"weaker statement", "theorem t : Q := trivial", "P", false, messages.ReasonStatementMismatch},
		{"missing theorem", "theorem u : P := trivial", "P", false, messages.ReasonStatementMismatch},
		{"does not compile", "theorem t : P := ERROR", "P", false, messages.ReasonCompileError},
		{"skip kernel", "set_option debug.skipKernelTC true\ntheorem t : P := trivial", "P", false, messages.ReasonUnsafeFlag},
		{"timeout", "theorem t : P := SLEEP", "P", false, messages.ReasonTimeout},
		{"crash", "theorem t : P := CRASH", "P", false, messages.ReasonCrash},
		{"forged response", "FORGE\ntheorem t : P := sorry", "P", false, messages.ReasonCrash},
		{"good after the failures", "theorem t : P := trivial", "P", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, _, err := pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: tc.statement, Proof: tc.proof})
			require.NoError(t, err)
			require.Equal(t, tc.accepted, v.Accepted, "%+v", v)
			require.Equal(t, tc.reason, v.Reason, "%s", v.Messages)
		})
	}
	// timeout, crash and forgery each killed their process; slots respawn
	// lazily, and two of the three killed slots were used again: 2 + 2.
	require.EqualValues(t, 4, starts.Load())
}

func TestReplPoolStatementError(t *testing.T) {
	sb := testRunner(t)
	pool, err := NewReplPool(context.Background(), sb.run, doubleProfile(t, 1, 100), testLogger())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, _, err = pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: "ERROR", Proof: "theorem t : P := trivial"})
	var se *StatementError
	require.True(t, errors.As(err, &se), "got %v", err)
}

func TestReplPoolRecyclesAfterMaxRequests(t *testing.T) {
	sb := testRunner(t)
	var starts atomic.Int64
	pool, err := NewReplPool(context.Background(), countingRun(sb.run, &starts), doubleProfile(t, 1, 2), testLogger())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	for range 5 {
		v, _, err := pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: "theorem t : P := trivial"})
		require.NoError(t, err)
		require.True(t, v.Accepted)
	}
	// 1 pre-warmed, then a new process after requests 2 and 4.
	require.EqualValues(t, 3, starts.Load())
}

func TestReplPoolConcurrentChecks(t *testing.T) {
	sb := testRunner(t)
	pool, err := NewReplPool(context.Background(), sb.run, doubleProfile(t, 2, 100), testLogger())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proof := "theorem t : P := trivial"
			if i%2 == 1 {
				proof = "theorem t : P := sorry"
			}
			v, _, err := pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: proof})
			if err == nil && v.Accepted != (i%2 == 0) {
				err = fmt.Errorf("check %d: verdict %+v", i, v)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestLeanREPLReal runs the pool against a real Lean REPL.
func TestLeanREPLReal(t *testing.T) {
	if _, err := exec.LookPath("lake"); err != nil {
		t.Skip("lake is not on PATH: real Lean cannot be installed on this machine; the pool is tested against testdata/lean-repl-double instead")
	}
	t.Skip("lake found, but no Lean project/REPL is configured for this test: set up a profile with lean.project and lean.repl")
}
