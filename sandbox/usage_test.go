package sandbox

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"
	"github.com/warrenhq/warren/sandbox/internal/cgroup"

	"github.com/stretchr/testify/require"
)

// usageGrowth is what the probe's child allocates and touches.
const usageGrowth = 64 << 20

// usageProbe idles until it reads a line, then starts a child that holds
// usageGrowth bytes (every page written) until it reads another line: the
// growth is in a descendant, so a measure of the command alone misses it.
const usageProbe = `
import subprocess, sys
print("idle", flush=True)
sys.stdin.readline()
subprocess.run([sys.executable, "-c", "import sys; hold = b'\\x01' * (64 << 20); print('grown', flush=True); sys.stdin.readline()"], check=True)
`

// usageMode is one way a run is observed: an isolated mode, cold (stdio
// are files) or warm (stdio are pipes the worker copies), with cgroups or
// the /proc fallback of a runner without them.
type usageMode struct {
	name   string
	warm   bool
	runner func(t *testing.T) (*Runner, Isolation)
}

func usageModes() []usageMode {
	noCgroups := func(r *Runner) *Runner {
		r.setupHost()
		r.cgroups = cgroup.Support{Why: "disabled by the test: the /proc tree fallback"}
		return r
	}
	return []usageMode{
		{"namespace cold", false, func(t *testing.T) (*Runner, Isolation) { return nsRunner(t), IsolationNamespace }},
		{"namespace warm", true, func(t *testing.T) (*Runner, Isolation) {
			// Not warmRunner: it sets noLayer while the refill already reads it.
			r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: nsRunner(t).cfg.ScratchRoot, Prestart: 1})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			waitWarm(t, r, Spec{}, 1)
			return r, IsolationNamespace
		}},
		{"namespace template", true, func(t *testing.T) (*Runner, Isolation) {
			r := templateRunner(t, 1)
			waitTemplates(t, r, 1)
			return r, IsolationNamespace
		}},
		{"namespace without cgroup", false, func(t *testing.T) (*Runner, Isolation) { return noCgroups(nsRunner(t)), IsolationNamespace }},
		{"landlock cold", false, func(t *testing.T) (*Runner, Isolation) {
			llRequire(t, landlockMinABIDefault)
			return llRunner(t, 1_900_100_900), IsolationLandlock
		}},
		{"landlock warm", true, func(t *testing.T) (*Runner, Isolation) {
			llRequire(t, landlockMinABIDefault)
			r, err := startedNew(Config{Isolation: IsolationLandlock, ScratchRoot: llTempDir(t, 0o711), Prestart: 1, UIDBase: 1_900_100_920, UIDCount: 8})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			require.Eventually(t, func() bool { return r.warm.ready(landlockMode{}.warmKey(Spec{})) == 1 }, 20*time.Second, 5*time.Millisecond, "warm pool fills")
			return r, IsolationLandlock
		}},
		{"landlock without cgroup", false, func(t *testing.T) (*Runner, Isolation) {
			llRequire(t, landlockMinABIDefault)
			return noCgroups(llRunner(t, 1_900_100_910)), IsolationLandlock
		}},
	}
}

// TestUsageMemoryObservesRun: Handle.Memory of a run grows by at least
// what a descendant of the command allocates (the idle reading is the
// control), is safe to call concurrently while the run ends, and reports
// ErrRunEnded afterwards.
func TestUsageMemoryObservesRun(t *testing.T) {
	for _, tc := range usageModes() {
		t.Run(tc.name, func(t *testing.T) {
			r, iso := tc.runner(t)
			s := startUsageProbe(t, r, Spec{Argv: py(usageProbe), Isolation: iso}, tc.warm)
			h := s.handle(t)
			s.expect(t, "idle")
			if tc.warm {
				k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
				if iso == IsolationLandlock {
					k = landlockMode{}.warmKey(Spec{})
				}
				require.Zero(t, r.warm.ready(k), "the run took the warm sandbox (the refill waits for its end)")
			}
			require.Equal(t, r.cgroups.Version != 0, h.(*runHandle).cg != nil, "measured from the cgroup exactly when the run has one")
			idle, err := h.Memory()
			require.NoError(t, err)
			require.Positive(t, idle, "an idle python holds some anonymous memory")
			require.Less(t, idle, int64(usageGrowth), "the idle run must not look grown already")

			s.send(t)
			s.expect(t, "grown")
			grown, err := h.Memory()
			require.NoError(t, err)
			require.GreaterOrEqual(t, grown-idle, int64(usageGrowth), "idle %d, grown %d", idle, grown)
			t.Logf("idle %d MiB, grown %d MiB", idle>>20, grown>>20)

			// Readers race the end of the run: each sees readings, then
			// ErrRunEnded, never anything else.
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					deadline := time.Now().Add(30 * time.Second)
					for time.Now().Before(deadline) {
						if _, err := h.Memory(); err != nil {
							if !errors.Is(err, ErrRunEnded) {
								errs <- err
							}
							return
						}
						time.Sleep(time.Millisecond)
					}
					errs <- errors.New("the run never ended")
				}()
			}
			s.send(t)
			res := s.wait(t)
			require.Equal(t, 0, res.ExitCode)
			require.GreaterOrEqual(t, res.PeakMemory, int64(usageGrowth))
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			_, err = h.Memory()
			require.ErrorIs(t, err, ErrRunEnded)
		})
	}
}

// TestUsageStartedOnlyWhenTheCommandRuns: a run whose setup fails, or
// whose command cannot be executed, never calls Started.
func TestUsageStartedOnlyWhenTheCommandRuns(t *testing.T) {
	r := nsRunner(t)
	called := false
	_, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Limits: Limits{TmpSize: -1}, Started: func(Handle) { called = true }})
	var se *SetupError
	require.ErrorAs(t, err, &se)
	require.False(t, called)
	res, err := r.Run(context.Background(), Spec{Argv: []string{"/nonexistent/command"}, Started: func(Handle) { called = true }})
	require.NoError(t, err)
	require.NotNil(t, res.ExecError)
	require.False(t, called)

	// The control: the same runner calls it for a command that runs.
	o := runIn(t, r, Spec{Argv: []string{"/bin/true"}, Started: func(Handle) { called = true }})
	require.Equal(t, 0, o.res.ExitCode)
	require.True(t, called)
}

// usageRun is a probe running in a sandbox, driven through its stdio.
type usageRun struct {
	in      io.WriteCloser
	out     *bufio.Reader
	handles chan Handle
	done    chan error
	res     *Result
}

// startUsageProbe starts spec with stdio the test drives: *os.File pipes
// (a cold start) or io pipes (eligible for a warm sandbox).
func startUsageProbe(t *testing.T, r *Runner, spec Spec, warm bool) *usageRun {
	t.Helper()
	u := &usageRun{handles: make(chan Handle, 1), done: make(chan error, 1)}
	var closeChild func()
	if warm {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		spec.Stdin, spec.Stdout = inR, outW
		u.in, u.out = inW, bufio.NewReader(outR)
		closeChild = func() { _ = outW.Close() }
		t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	} else {
		inR, inW, err := os.Pipe()
		require.NoError(t, err)
		outR, outW, err := os.Pipe()
		require.NoError(t, err)
		spec.Stdin, spec.Stdout = inR, outW
		u.in, u.out = inW, bufio.NewReader(outR)
		closeChild = func() { _ = inR.Close(); _ = outW.Close() }
		t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	}
	stderr := &syncbuf.Buffer{}
	spec.Stderr = stderr
	spec.Limits.Wall = time.Minute
	spec.Started = func(h Handle) { u.handles <- h }
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		res, err := r.Run(ctx, spec)
		closeChild()
		u.res = res
		if err != nil {
			err = errors.Join(err, errors.New("stderr: "+stderr.String()))
		}
		u.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-u.done:
		case <-time.After(30 * time.Second):
			t.Error("the probe's run did not end")
		}
	})
	return u
}

func (u *usageRun) handle(t *testing.T) Handle {
	t.Helper()
	select {
	case h := <-u.handles:
		return h
	case err := <-u.done:
		t.Fatalf("the run ended before Started: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Started was not called")
	}
	return nil
}

func (u *usageRun) expect(t *testing.T, want string) {
	t.Helper()
	line, err := u.out.ReadString('\n')
	require.NoError(t, err, "waiting for %q", want)
	require.Equal(t, want, strings.TrimSpace(line))
}

func (u *usageRun) send(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(u.in, "\n")
	require.NoError(t, err)
}

func (u *usageRun) wait(t *testing.T) *Result {
	t.Helper()
	select {
	case err := <-u.done:
		u.done <- err // for the cleanup
		require.NoError(t, err)
		return u.res
	case <-time.After(30 * time.Second):
		t.Fatal("the probe did not exit")
	}
	return nil
}
