package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// The end of a task is Warren's decision: whatever the task's program
// does (sandboxtest.Tricks: a thread that makes Warren its tracer, a
// traced or stopped process, a daemon, a fork storm), its result comes
// within endBound of its wall limit or cancel, nothing it started is
// left, and the runner serves the next task.

// endBound is how long after its timeout (or cancel, or its own end) a
// task's result may take, teardown included.
const endBound = 2 * time.Second

// endSlack covers a loaded host's scheduling on top of endBound.
const endSlack = time.Second

// endWall is the wall limit of the tricks' runs.
const endWall = time.Second

// endEntry is a mode and a way into it: a cold run, or a warm sandbox (a
// template in the layered namespace mode).
type endEntry struct {
	name   string
	runner func(t *testing.T) (*Runner, Isolation)
}

// endEntries are the entries with Landlock-mode uid pools from uidBase
// (20 uids): a test's own, so that no zombie of another test's run, not
// reaped yet by the host's init, counts against its RLIMIT_NPROC.
func endEntries(uidBase uint32) []endEntry {
	return []endEntry{
		{"namespace cold", func(t *testing.T) (*Runner, Isolation) { return nsRunner(t), IsolationNamespace }},
		{"namespace template", func(t *testing.T) (*Runner, Isolation) {
			r := templateRunner(t, 2) // a trick and its control at once
			waitTemplates(t, r, 2)
			return r, IsolationNamespace
		}},
		{"landlock cold", func(t *testing.T) (*Runner, Isolation) {
			llRequire(t, landlockMinABIDefault)
			return llRunner(t, uidBase), IsolationLandlock
		}},
		{"landlock warm", func(t *testing.T) (*Runner, Isolation) {
			llRequire(t, landlockMinABIDefault)
			r, err := startedNew(Config{Isolation: IsolationLandlock, ScratchRoot: llTempDir(t, 0o711), Prestart: 2, UIDBase: uidBase + 10, UIDCount: 8})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			require.Eventually(t, func() bool { return r.warm.ready(landlockMode{}.warmKey(Spec{})) == 2 }, 20*time.Second, 5*time.Millisecond, "warm pool fills")
			return r, IsolationLandlock
		}},
		{"auto cold", func(t *testing.T) (*Runner, Isolation) {
			r, err := startedNew(Config{ScratchRoot: nsRunner(t).cfg.ScratchRoot})
			require.NoError(t, err)
			return r, IsolationAuto
		}},
		{"auto template", func(t *testing.T) (*Runner, Isolation) {
			r := templateRunner(t, 2)
			waitTemplates(t, r, 2)
			return r, IsolationAuto
		}},
	}
}

// endHow is what ends a trick's run.
type endHow int

const (
	byTimeout endHow = iota // its wall limit
	byCancel                // its context, once it is ready
	byItself                // it exits (Trick.EndsByItself)
)

func (h endHow) String() string {
	return [...]string{"timeout", "cancel", "itself"}[h]
}

// endOut is a trick's run as the test saw it.
type endOut struct {
	res    *Result
	stdout string
	// seen are the trick's processes once it was ready.
	seen []sandboxtest.Proc
}

// runTrick runs trick (on, or its control) in r until how ends it, and
// checks the lifecycle properties: the result within endBound (+slack)
// of the end, no process of the trick left, no zombie child of the
// worker, and the runner runs a harmless task next.
func runTrick(t *testing.T, r *Runner, iso Isolation, trick sandboxtest.Trick, on bool, how endHow) endOut {
	t.Helper()
	marker := fmt.Sprintf("warren-end-%s-%d", trick.Name, time.Now().UnixNano())
	zombies := sandboxtest.ZombieChildren() // other tests' own
	stdout := sandboxtest.NewLineWatch("ready")
	var stderr bytes.Buffer
	wall := endWall
	if how != byTimeout {
		wall = time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := r.Run(ctx, Spec{Argv: trick.Argv(marker, on), Isolation: iso, Stdout: stdout, Stderr: &stderr,
			Limits: Limits{Wall: wall, Processes: 48}})
		done <- ran{res, err}
	}()
	var o endOut
	var end time.Time
	select {
	case <-stdout.Seen():
		ready := time.Now()
		end = ready.Add(wall) // the wall timer started before the task was ready
		switch how {
		case byCancel:
			o.seen = waitShows(t, marker, trick, on)
			cancel()
			end = time.Now()
		case byItself:
			end = ready
		default:
			o.seen = waitShows(t, marker, trick, on)
		}
	case out := <-done:
		require.NoError(t, out.err, "stderr: %s", stderr.String())
		t.Fatalf("%s ended before it was ready: %+v, stdout %q stderr %q", trick.Name, out.res, stdout.String(), stderr.String())
	}
	select {
	case out := <-done:
		require.NoError(t, out.err, "stderr: %s", stderr.String())
		o.res = out.res
	case <-time.After(time.Until(end.Add(endBound + endSlack))):
		t.Errorf("%s (%s): no result %s after its end; processes: %+v", trick.Name, how, endBound+endSlack, sandboxtest.MarkerProcs(marker))
		// Leave nothing behind for the next test, as far as possible.
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		t.FailNow()
	}
	o.stdout = stdout.String()
	require.Empty(t, sandboxtest.MarkerProcs(marker), "processes of the task are left after its result")
	require.Empty(t, sandboxtest.NewZombieChildren(zombies), "zombie children of the worker")
	next := modeRun(t, r, iso, Spec{Argv: sh("echo ok")})
	require.Equal(t, 0, next.res.ExitCode, next.stderr)
	require.Equal(t, "ok\n", next.stdout, "the runner serves the next task")
	return o
}

// waitShows waits until the trick's processes show it was played (with
// the trick on; the control's show that it was not) and returns them: the
// processes of a ready trick are there to be found.
func waitShows(t *testing.T, marker string, trick sandboxtest.Trick, on bool) []sandboxtest.Proc {
	t.Helper()
	var ps []sandboxtest.Proc
	deadline := time.Now().Add(time.Minute)
	for {
		ps = sandboxtest.MarkerProcs(marker)
		if len(ps) > 0 && (trick.Shows == nil || !on || trick.Shows(ps)) {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: its processes never showed the trick: %+v", trick.Name, ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTheEndOfATaskIsWarrensDecision: every trick, in every mode and way
// in, ends within endBound of its wall limit (a trick that exits by
// itself: of its exit), timed out as the control is, with nothing left
// and the runner serving the next task; the control (the same program
// without its trick) ends the same way and shows no trick.
func TestTheEndOfATaskIsWarrensDecision(t *testing.T) {
	for _, e := range endEntries(1_900_102_000) {
		t.Run(e.name, func(t *testing.T) {
			r, iso := e.runner(t)
			for _, trick := range sandboxtest.Tricks {
				how := byTimeout
				if trick.EndsByItself {
					how = byItself
				}
				t.Run(trick.Name, func(t *testing.T) {
					for _, on := range []bool{false, true} {
						t.Run(map[bool]string{false: "control", true: "trick"}[on], func(t *testing.T) {
							if !trick.Hog {
								t.Parallel() // the trick beside its control
							}
							o := runTrick(t, r, iso, trick, on, how)
							if how == byItself {
								require.Equal(t, 0, o.res.ExitCode, "%+v", o.res)
								require.False(t, o.res.TimedOut, "%+v", o.res)
							} else {
								require.True(t, o.res.TimedOut, "%+v", o.res)
								require.Equal(t, TimeoutWall, o.res.Timeout, "%+v", o.res)
							}
							if trick.Evidence != "" {
								require.Equal(t, on, strings.Contains("\n"+o.stdout, "\n"+trick.Evidence), "stdout %q", o.stdout)
							}
							if trick.Shows != nil && how != byItself {
								require.Equal(t, on, trick.Shows(o.seen), "%+v", o.seen)
							}
						})
					}
				})
			}
		})
	}
}

// TestACancelledTaskEndsAtOnce: a cancel ends the tricks that hold on to
// their end as it ends the control: the result within endBound, killed,
// nothing left.
func TestACancelledTaskEndsAtOnce(t *testing.T) {
	for _, e := range endEntries(1_900_102_020) {
		t.Run(e.name, func(t *testing.T) {
			r, iso := e.runner(t)
			for _, name := range []string{"traceme-thread", "traceme-stop", "fork-storm"} {
				trick := sandboxtest.TrickNamed(name)
				t.Run(name, func(t *testing.T) {
					for _, on := range []bool{false, true} {
						o := runTrick(t, r, iso, trick, on, byCancel)
						require.Equal(t, "SIGKILL", o.res.Signal, "trick %v: %+v", on, o.res)
						require.False(t, o.res.TimedOut, "%+v", o.res)
					}
				})
			}
		})
	}
}

// TestAnotherRunsEndLeavesASiblingOfALiveTask: a Landlock-mode task's
// clone(CLONE_PARENT) sibling is a child of the worker; another run's end
// (its kill and teardown sweep the worker's sandboxed orphans on an
// unprivileged worker without a cgroup) must leave it, and with it the
// task, to the task's own run: the task still times out at its wall
// limit. The control: the same sibling once its task has ended is swept.
func TestAnotherRunsEndLeavesASiblingOfALiveTask(t *testing.T) {
	llRequire(t, landlockMinABIDefault)
	r := llRunner(t, 1_900_102_040)
	trick := sandboxtest.TrickNamed("clone-parent")
	marker := fmt.Sprintf("warren-sibling-%d", time.Now().UnixNano())
	stdout := sandboxtest.NewLineWatch("ready")
	var stderr bytes.Buffer
	done := make(chan *Result, 1)
	go func() {
		res, err := r.Run(context.Background(), Spec{Argv: trick.Argv(marker, true), Isolation: IsolationLandlock,
			Stdout: stdout, Stderr: &stderr, Limits: Limits{Wall: 8 * time.Second, Processes: 48}})
		assert.NoError(t, err, "stderr: %s", stderr.String())
		done <- res
	}()
	select {
	case <-stdout.Seen():
	case res := <-done:
		t.Fatalf("the trick ended before it was ready: %+v, stdout %q stderr %q", res, stdout.String(), stderr.String())
	}
	require.Contains(t, stdout.String(), "clone-parent made")
	require.Eventually(t, func() bool { return len(sandboxtest.MarkerProcs(marker)) == 2 }, time.Minute, 5*time.Millisecond,
		"the task and its sibling")
	// Other runs end, by themselves and by their wall limit.
	modeRun(t, r, IsolationLandlock, Spec{Argv: sh("true")})
	modeRun(t, r, IsolationLandlock, Spec{Argv: sh("sleep 60"), Limits: Limits{Wall: 200 * time.Millisecond}})
	require.Len(t, sandboxtest.MarkerProcs(marker), 2, "another run's end killed a live task's processes")
	res := <-done
	require.True(t, res.TimedOut, "%+v", res)
	require.Equal(t, TimeoutWall, res.Timeout, "%+v", res)
	require.Empty(t, sandboxtest.MarkerProcs(marker), "the sibling outlived its run")
}
