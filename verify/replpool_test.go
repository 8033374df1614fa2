package verify

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// doubleProfile is a lean-repl profile whose REPL is the protocol test
// double in testdata/lean-repl-double.
func doubleProfile(t testing.TB, size, maxRequests int) *Profile {
	t.Helper()
	return doublePoolProfile(t, fmt.Sprintf("size: %d, max_requests: %d", size, maxRequests))
}

// doublePoolProfile is doubleProfile with the given pool settings (the
// entries of a YAML flow mapping).
func doublePoolProfile(t testing.TB, pool string) *Profile {
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
    pool: {%s}
`, dir, dir, filepath.Join(dir, "repl.py"), pool))
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
	// timeout, crash and forgery each killed their process, and each slot
	// respawned in the background: 2 + 3 (the last respawn may still be
	// under way when the last proof returns).
	require.Eventually(t, func() bool { return pool.Stats().Started == 5 }, 20*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 5, starts.Load())
	require.Equal(t, ReplStats{Started: 5, Recycled: map[RecycleCause]int64{RecycleTimeout: 1, RecycleCrash: 2}}, pool.Stats())
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
	require.Equal(t, ReplStats{Started: 3, Recycled: map[RecycleCause]int64{RecycleRequests: 2}}, pool.Stats())
}

// TestReplPoolRespawnsRecycledProcessesEagerly: a recycled process is
// replaced in the background, header imported, before the next proof asks
// for it (lazily, the next proof would pay the import). The control is
// the pre-warmed start: one process before any proof.
func TestReplPoolRespawnsRecycledProcessesEagerly(t *testing.T) {
	sb := testRunner(t)
	pool, err := NewReplPool(context.Background(), sb.run, doubleProfile(t, 1, 1), testLogger())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.EqualValues(t, 1, pool.Stats().Started, "control: the pre-warmed process only")
	v, _, err := pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: "theorem t : P := trivial"})
	require.NoError(t, err)
	require.True(t, v.Accepted)
	require.Eventually(t, func() bool { return pool.Stats().Started == 2 }, 20*time.Second, 5*time.Millisecond,
		"the recycled process is replaced with no proof asking for it")
	require.Equal(t, map[RecycleCause]int64{RecycleRequests: 1}, pool.Stats().Recycled)
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

// doubleWhoami is the double's answer to "-- DOUBLE: whoami".
var doubleWhoami = regexp.MustCompile(`DOUBLE process ([0-9a-f]+) command (\d+)`)

// whoami asks the pool's (only) process who it is: the double's random
// per-process id.
func whoami(t *testing.T, pool *ReplPool) string {
	t.Helper()
	v, _, err := pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: "theorem t : P := trivial\n-- DOUBLE: whoami"})
	require.NoError(t, err)
	require.Equal(t, messages.ReasonCompileError, v.Reason, "%+v", v)
	m := doubleWhoami.FindStringSubmatch(v.Messages)
	require.NotNil(t, m, v.Messages)
	return m[1]
}

// requireHandles skips when the sandbox gives no handle on its runs
// (isolation none: testRunner fails instead under CI=true).
func requireHandles(t *testing.T, sb testSandbox) {
	t.Helper()
	if !sb.isolated {
		t.Skipf("no isolated sandbox here (%s): isolation none gives no handle to read memory from", sb.why)
	}
}

// TestReplPoolRecyclesOnMemoryGrowth: a proof that grows the process past
// max_memory_bytes keeps its verdict, and the next proof runs on a fresh
// process; with the default limit (80% of 2 GiB) the same proofs run on
// one process (the control).
func TestReplPoolRecyclesOnMemoryGrowth(t *testing.T) {
	sb := testRunner(t)
	requireHandles(t, sb)
	tests := []struct {
		name     string
		pool     string
		recycled bool
	}{
		{"grown past the limit", "size: 1, max_requests: 100, max_memory_bytes: 50331648", true}, // 48 MiB < 64 MiB grown
		{"control: default limit", "size: 1, max_requests: 100", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var starts atomic.Int64
			pool, err := NewReplPool(context.Background(), countingRun(sb.run, &starts), doublePoolProfile(t, tc.pool), testLogger())
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			before := whoami(t, pool)
			require.Equal(t, before, whoami(t, pool), "an idle process is below the limit: not recycled")

			grown := []struct {
				proof    string
				accepted bool
				reason   messages.Reason
			}{
				{"-- DOUBLE: grow 64\ntheorem t : P := trivial", true, ""},
				{"-- DOUBLE: grow 64\ntheorem t : P := sorry", false, messages.ReasonIncomplete},
			}
			for i, g := range grown {
				v, _, err := pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: g.proof})
				require.NoError(t, err)
				require.Equal(t, g.accepted, v.Accepted, "the grown proof keeps its verdict: %+v", v)
				require.Equal(t, g.reason, v.Reason)
				want := int64(0)
				if tc.recycled {
					want = int64(i + 1)
				}
				require.Equal(t, want, pool.Stats().Recycled[RecycleMemory], "checked right after the proof, not only before the next")
				after := whoami(t, pool)
				if tc.recycled {
					require.NotEqual(t, before, after, "the proof after the growth runs on a fresh process")
				} else {
					require.Equal(t, before, after, "no limit passed: same process")
				}
				before = after
			}
			st := pool.Stats()
			if tc.recycled {
				require.EqualValues(t, 3, starts.Load())
				require.Equal(t, ReplStats{Started: 3, Recycled: map[RecycleCause]int64{RecycleMemory: 2}}, st)
			} else {
				require.EqualValues(t, 1, starts.Load())
				require.Equal(t, ReplStats{Started: 1, Recycled: map[RecycleCause]int64{}}, st)
			}
		})
	}
}

// TestReplPoolRecyclesGrownIdleProcess: memory is checked again before a
// process gets its next proof, so growth while idle (a task a proof left
// running) is caught too.
func TestReplPoolRecyclesGrownIdleProcess(t *testing.T) {
	sb := testRunner(t)
	requireHandles(t, sb)
	handles := make(chan sandbox.Handle, 4)
	run := func(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
		started := s.Started
		s.Started = func(h sandbox.Handle) { handles <- h; started(h) }
		return sb.run(ctx, s)
	}
	const limit = 48 << 20
	pool, err := NewReplPool(context.Background(), run, doublePoolProfile(t, fmt.Sprintf("size: 1, max_requests: 100, max_memory_bytes: %d", limit)), testLogger())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	h := <-handles
	before := whoami(t, pool)

	// The double grows 64 MiB two seconds after answering: after the
	// pool's post-proof check.
	v, _, err := pool.Check(context.Background(), &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: "-- DOUBLE: grow-later 64\ntheorem t : P := trivial"})
	require.NoError(t, err)
	require.True(t, v.Accepted, "%+v", v)
	require.Empty(t, pool.Stats().Recycled, "not grown yet when the proof finished")
	require.Eventually(t, func() bool {
		n, err := h.Memory()
		return err == nil && n > limit
	}, 30*time.Second, 10*time.Millisecond, "the idle process grows")

	require.NotEqual(t, before, whoami(t, pool), "the grown idle process was recycled before its next proof")
	require.Equal(t, map[RecycleCause]int64{RecycleMemory: 1}, pool.Stats().Recycled)
	_, err = h.Memory()
	require.ErrorIs(t, err, sandbox.ErrRunEnded, "the recycled process's sandbox is gone")
}
