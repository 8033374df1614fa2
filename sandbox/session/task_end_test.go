package session

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// The end of a session's command, and of the session, is Warren's
// decision too (sandbox's TestTheEndOfATaskIsWarrensDecision for a run):
// every trick of sandboxtest.Tricks, run by the agent, ends within
// endBound of its exec timeout or cancel with the session serving on,
// and a session deleted while tricks run in it ends within endBound with
// nothing of it left.

// endBound is how long after an exec's timeout or cancel, or a session's
// Close, the end may take; endSlack covers a loaded host's scheduling.
const (
	endBound = 2 * time.Second
	endSlack = time.Second
)

// execTimeout is the tricks' exec timeout: it starts at the agent's fork,
// so it needs no room for a sandbox's setup.
const execTimeout = time.Second

// endEntry is a mode, cold or warm (a slot, as the worker's sessions get
// in the namespace mode: bounded homes; the Landlock mode has no slots,
// and an unprivileged worker there no bounded home).
type endEntry struct {
	name   string
	runner func(t *testing.T) *sandbox.Runner
}

func endEntries() []endEntry {
	var es []endEntry
	for _, m := range []sandbox.Isolation{sandbox.IsolationNamespace, sandbox.IsolationLandlock, sandbox.IsolationAuto} {
		es = append(es,
			endEntry{string(m) + " cold", func(t *testing.T) *sandbox.Runner { return newRunner(t, m) }},
			endEntry{string(m) + " warm", func(t *testing.T) *sandbox.Runner {
				cfg := sandbox.Config{Isolation: m, Prestart: 1, Defaults: sandbox.Limits{Disk: sandbox.DefaultDisk}}
				if m == sandbox.IsolationLandlock {
					cfg.Defaults.Disk = 0
				}
				r := newRunnerWith(t, cfg)
				s, err := Start(context.Background(), r, Spec{})
				require.NoError(t, err)
				require.NoError(t, s.Close(context.Background()))
				return r
			}})
	}
	return es
}

// trickExec is one trick's command in a session, as the test watches it.
type trickExec struct {
	trick  sandboxtest.Trick
	on     bool
	marker string
	out    *sandboxtest.LineWatch
}

func newTrickExec(trick sandboxtest.Trick, on bool) *trickExec {
	return &trickExec{trick: trick, on: on, marker: fmt.Sprintf("warren-send-%s-%v-%d", trick.Name, on, time.Now().UnixNano()),
		out: sandboxtest.NewLineWatch("ready")}
}

func (x *trickExec) request(timeout time.Duration, background bool) ExecRequest {
	return ExecRequest{Argv: x.trick.Argv(x.marker, x.on), Timeout: timeout, Background: background}
}

// shown waits until the command's processes show its trick (the
// control's: that they run) and returns them.
func (x *trickExec) shown(t *testing.T) []sandboxtest.Proc {
	t.Helper()
	var ps []sandboxtest.Proc
	eventually(t, x.trick.Name+" shows its trick", func() bool {
		ps = sandboxtest.MarkerProcs(x.marker)
		return len(ps) > 0 && (x.trick.Shows == nil || !x.on || x.trick.Shows(ps))
	})
	return ps
}

// within fails the test unless done is closed by deadline.
func within(t *testing.T, what string, done <-chan struct{}, deadline time.Time) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Until(deadline)):
		t.Fatalf("%s: not within %s", what, endBound+endSlack)
	}
}

// TestTheEndOfASessionsCommandIsWarrensDecision: each trick and its
// control, run at once in one session with an exec timeout, come back
// timed out within endBound of it, leaving nothing (daemons and storms
// included); the session runs the next command. Then both run again in the background, and Close ends the
// session within endBound with nothing of either left, daemons and
// storms included; the next session on the runner runs.
func TestTheEndOfASessionsCommandIsWarrensDecision(t *testing.T) {
	for _, e := range endEntries() {
		t.Run(e.name, func(t *testing.T) {
			r := e.runner(t)
			for _, trick := range sandboxtest.Tricks {
				t.Run(trick.Name, func(t *testing.T) {
					s := start(t, r, Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Processes: 96}}})
					execsEndInTime(t, s, trick)
					res, out, _ := run(t, s, sh("echo ok"))
					require.Equal(t, 0, res.ExitCode)
					require.Equal(t, "ok\n", out, "the session serves the next command")
					deleteEndsInTime(t, s, trick)
				})
			}
			s := start(t, r, Spec{})
			res, out, _ := run(t, s, sh("echo ok"))
			require.Equal(t, "ok\n", out, "the runner serves the next session: %+v", res)
		})
	}
}

// execsEndInTime runs trick and its control at once, in the foreground
// with execTimeout, and checks their ends.
func execsEndInTime(t *testing.T, s *Session, trick sandboxtest.Trick) {
	t.Helper()
	wall := execTimeout
	if trick.EndsByItself {
		wall = time.Minute
	}
	type ran struct {
		x    *trickExec
		done chan struct{}
		res  ExecResult
		err  error
	}
	// The control first: it is ready before a storm takes the processes.
	var rs []*ran
	var ends []time.Time
	for _, on := range []bool{false, true} {
		r := &ran{x: newTrickExec(trick, on), done: make(chan struct{})}
		go func() {
			defer close(r.done)
			r.res, r.err = s.Exec(context.Background(), r.x.request(wall, false), r.x.out, nil)
		}()
		rs = append(rs, r)
		ready(t, r.x, r.done)
		end := time.Now()
		if !trick.EndsByItself {
			end = end.Add(wall)
			r.x.shown(t)
		}
		ends = append(ends, end)
	}
	for i, r := range rs {
		within(t, fmt.Sprintf("%s (trick %v): its exec's result", trick.Name, r.x.on), r.done, ends[i].Add(endBound+endSlack))
	}
	for i, r := range rs {
		x, res := r.x, r.res
		require.NoError(t, r.err)
		if trick.EndsByItself {
			require.Equal(t, 0, res.ExitCode, "%+v", res)
		} else {
			require.True(t, res.TimedOut, "%+v", res)
			require.Equal(t, "SIGKILL", res.Signal, "%+v", res)
		}
		if trick.Evidence != "" {
			require.Equal(t, x.on, strings.Contains("\n"+x.out.String(), "\n"+trick.Evidence), "trick %v: %q", x.on, x.out.String())
		}
		gone(t, x, ends[i].Add(endBound+endSlack), "its exec's end")
	}
}

// gone fails the test unless every process of x is gone by deadline: a
// killed process finishes its exit on its own, just after the result.
func gone(t *testing.T, x *trickExec, deadline time.Time, after string) {
	t.Helper()
	for {
		ps := sandboxtest.MarkerProcs(x.marker)
		if len(ps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (trick %v): processes left %s after %s: %+v", x.trick.Name, x.on, endBound+endSlack, after, ps)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ready waits until x printed "ready", failing if its exec ended first.
func ready(t *testing.T, x *trickExec, done <-chan struct{}) {
	t.Helper()
	select {
	case <-x.out.Seen():
	case <-done:
		select {
		case <-x.out.Seen():
		default:
			t.Fatalf("%s (trick %v) ended before it was ready: %q", x.trick.Name, x.on, x.out.String())
		}
	}
}

// deleteEndsInTime runs trick and its control in the background and
// closes the session: within endBound, nothing of either is left.
func deleteEndsInTime(t *testing.T, s *Session, trick sandboxtest.Trick) {
	t.Helper()
	var xs []*trickExec
	for _, on := range []bool{false, true} {
		x := newTrickExec(trick, on)
		_, err := s.Exec(context.Background(), x.request(0, true), nil, nil)
		require.NoError(t, err)
		xs = append(xs, x)
	}
	for _, x := range xs {
		if !trick.EndsByItself {
			x.shown(t)
		}
	}
	zombies := sandboxtest.ZombieChildren() // other tests' own
	closed := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(closed)
		require.NoError(t, s.Close(context.Background()))
	}()
	within(t, trick.Name+": Close", closed, start.Add(endBound+endSlack))
	for _, x := range xs {
		gone(t, x, start.Add(endBound+endSlack), "the session's Close")
	}
	require.Empty(t, sandboxtest.NewZombieChildren(zombies), "zombie children of the worker")
}

// TestACancelledCommandEndsAtOnce: a cancelled exec of a trick leaves
// nothing within endBound, as its control does, and the session runs the
// next command.
func TestACancelledCommandEndsAtOnce(t *testing.T) {
	for _, e := range endEntries() {
		t.Run(e.name, func(t *testing.T) {
			s := start(t, e.runner(t), Spec{})
			for _, name := range []string{"traceme-thread", "traceme-stop", "daemon", "fork-storm"} {
				for _, on := range []bool{false, true} {
					x := newTrickExec(sandboxtest.TrickNamed(name), on)
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					ended := make(chan struct{})
					go func() {
						_, err := s.Exec(ctx, x.request(0, false), x.out, nil)
						done <- err
						close(ended)
					}()
					ready(t, x, ended)
					x.shown(t)
					cancel()
					end := time.Now().Add(endBound + endSlack)
					require.ErrorIs(t, <-done, context.Canceled)
					gone(t, x, end, "the cancel")
					res, out, _ := run(t, s, sh("echo ok"))
					require.Equal(t, "ok\n", out, "%+v", res)
				}
			}
		})
	}
}
