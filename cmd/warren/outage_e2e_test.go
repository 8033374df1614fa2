package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/internal/syncbuf"
	"github.com/warrenhq/warren/messages"
)

// clientProc is a client command running as a process.
type clientProc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncbuf.Buffer
	exited         chan error
}

func (e *e2e) startClient(t *testing.T, args ...string) *clientProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	p := &clientProc{cmd: e.cmd(ctx, args...), stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, exited: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	})
	return p
}

// wait waits for the command to end and returns its exit code.
func (p *clientProc) wait(t *testing.T) int {
	t.Helper()
	err := <-p.exited
	p.exited <- err // for the cleanup
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	require.NoError(t, err, "stderr:\n%s", p.stderr.String())
	return 0
}

// says waits until the command's stderr holds s.
func (p *clientProc) says(t *testing.T, s string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), s) }, time.Minute, 10*time.Millisecond,
		"the command never said %q; stderr:\n%s", s, p.stderr.String())
}

// storedTasks is how many tasks the broker's task stream holds.
func (e *e2e) storedTasks(t *testing.T) uint64 {
	t.Helper()
	s, err := e.b.JS.Stream(context.Background(), messages.StreamTasks)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

// Each client command that waits on the broker rides a broker stop and
// start: while the broker is away it says it is unreachable and for how
// much longer it retries (--retry-for), says when it is back, and ends
// with every result. Each command's tasks are queued before the broker
// stops and run only after it is back (the worker starts then), so the
// outage lands inside the command's wait.
func TestE2EClientCommandsRideABrokerOutage(t *testing.T) {
	batch := writeBatch(t, 3, func(i int) string { return fmt.Sprintf("echo ride-%d", i) })
	for _, tc := range []struct {
		name string
		// start queues the command's tasks and runs it (the broker is up).
		start func(t *testing.T, e *e2e) *clientProc
		// worker starts what runs the tasks once the broker is back.
		worker func(t *testing.T, e *e2e)
		check  func(t *testing.T, p *clientProc)
	}{
		{
			name: "submit --wait",
			start: func(t *testing.T, e *e2e) *clientProc {
				return e.startClient(t, "submit", batch, "--batch", "ride", "--wait", "--queue-unserved")
			},
			worker: func(t *testing.T, e *e2e) { e.startWorker(t, 2) },
			check: func(t *testing.T, p *clientProc) {
				require.Len(t, parseResults(t, p.stdout.String()), 3)
			},
		},
		{
			name: "results",
			start: func(t *testing.T, e *e2e) *clientProc {
				_, stderr, code := e.run(t, "submit", batch, "--batch", "ride", "--queue-unserved")
				require.Equal(t, 0, code, stderr)
				p := e.startClient(t, "results", "ride")
				p.says(t, "ride: 0/3 done") // waiting
				return p
			},
			worker: func(t *testing.T, e *e2e) { e.startWorker(t, 2) },
			check: func(t *testing.T, p *clientProc) {
				require.Len(t, parseResults(t, p.stdout.String()), 3)
			},
		},
		{
			name: "exec",
			start: func(t *testing.T, e *e2e) *clientProc {
				return e.startClient(t, "exec", "--isolation", "none", "--queue-unserved", "--", "sh", "-c", "echo exec-out; exit 3")
			},
			worker: func(t *testing.T, e *e2e) { e.startWorker(t, 1) },
			check: func(t *testing.T, p *clientProc) {
				require.Equal(t, "exec-out\n", p.stdout.String())
			},
		},
		{
			name: "verify",
			start: func(t *testing.T, e *e2e) *clientProc {
				requireCoq(t)
				return e.startClient(t, "verify", demoBatch, "--profile", "coq", "--queue-unserved")
			},
			worker: func(t *testing.T, e *e2e) {
				root, err := filepath.Abs("../..")
				require.NoError(t, err)
				e.startWorkerIn(t, []string{"--isolation", "auto", "--scratch-root", sandboxScratch(t)}, 2,
					"--verify-profiles", filepath.Join(root, "testdata/verify/coq-profiles.yaml"))
			},
			check: func(t *testing.T, p *clientProc) {
				require.Contains(t, p.stderr.String(), demoSummary)
				require.Len(t, strings.Split(strings.TrimSpace(p.stdout.String()), "\n"), 9)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t)
			p := tc.start(t, e)
			require.Eventually(t, func() bool { return e.storedTasks(t) > 0 }, time.Minute, 10*time.Millisecond,
				"the command queued its tasks: %s", p.stderr.String())
			// Every task queued: the command waits for its results now.
			require.Eventually(t, func() bool { return e.published(t) }, time.Minute, 10*time.Millisecond)

			e.b.Server.Stop()
			p.says(t, "warren: broker unreachable at "+e.b.URL+", retrying for ")
			require.Contains(t, p.stderr.String(), "more (--retry-for 2m0s)")
			e.b.Restart(t, brokertest.Options{})
			tc.worker(t, e)

			code := p.wait(t)
			if tc.name == "exec" {
				require.Equal(t, 3, code, "exec exits with its command's status; stderr:\n%s", p.stderr.String())
			} else {
				require.Equal(t, 0, code, "stderr:\n%s", p.stderr.String())
			}
			require.Contains(t, p.stderr.String(), "warren: broker reachable again at "+e.b.URL)
			tc.check(t, p)
		})
	}
}

// published reports whether every batch's manifest says its publication
// is complete.
func (e *e2e) published(t *testing.T) bool {
	t.Helper()
	kv, err := e.b.JS.KeyValue(context.Background(), messages.BucketBatches)
	require.NoError(t, err)
	keys, err := kv.ListKeys(context.Background())
	require.NoError(t, err)
	n := 0
	for k := range keys.Keys() {
		entry, err := kv.Get(context.Background(), k)
		require.NoError(t, err)
		var m messages.BatchManifest
		require.NoError(t, json.Unmarshal(entry.Value(), &m))
		a, ok := m.Attempt(m.LatestAttempt())
		if !ok || !a.Complete {
			return false
		}
		n++
	}
	return n > 0
}

// A broker that stays away past --retry-for ends a waiting command with
// an error that says so and what to do: `results` names the command that
// resumes, `exec` where its task's result will be (the task is not
// cancelled: it may still run).
func TestE2EClientCommandsGiveUpAfterRetryFor(t *testing.T) {
	batch := writeBatch(t, 2, func(i int) string { return "true" })
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, e *e2e) *clientProc
		says  []string
	}{
		{
			name: "results",
			start: func(t *testing.T, e *e2e) *clientProc {
				_, stderr, code := e.run(t, "submit", batch, "--batch", "away", "--queue-unserved")
				require.Equal(t, 0, code, stderr)
				p := e.startClient(t, "results", "away", "--retry-for", "2s")
				p.says(t, "away: 0/2 done") // waiting
				return p
			},
			says: []string{"unreachable for 2s", "0 result(s) written; `warren results away --attempt 1` resumes"},
		},
		{
			name: "exec",
			start: func(t *testing.T, e *e2e) *clientProc {
				return e.startClient(t, "exec", "--retry-for", "2s", "--queue-unserved", "--", "true")
			},
			says: []string{"unreachable for 2s", "may still run: `warren results exec-"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t)
			p := tc.start(t, e)
			require.Eventually(t, func() bool { return e.storedTasks(t) > 0 && e.published(t) }, time.Minute, 10*time.Millisecond,
				"the command queued its tasks: %s", p.stderr.String())
			e.b.Server.Stop()
			require.Equal(t, 1, p.wait(t), "stderr:\n%s", p.stderr.String())
			stderr := p.stderr.String()
			require.Contains(t, stderr, "warren: broker unreachable at "+e.b.URL+", retrying for ")
			for _, s := range append(tc.says, "the broker was away for longer than --retry-for 2s: check that it runs") {
				require.Contains(t, stderr, s)
			}
		})
	}
}

// A client command started while the broker is down waits for its first
// connection as for any outage, saying so, and goes on once it is back.
func TestE2EClientWaitsForItsFirstConnection(t *testing.T) {
	e := newE2E(t)
	batch := writeBatch(t, 2, func(i int) string { return fmt.Sprintf("echo first-%d", i) })
	_, stderr, code := e.run(t, "submit", batch, "--batch", "first", "--queue-unserved")
	require.Equal(t, 0, code, stderr)
	e.b.Server.Stop()
	p := e.startClient(t, "results", "first")
	p.says(t, "warren: broker unreachable at "+e.b.URL+", retrying for ")
	e.b.Restart(t, brokertest.Options{})
	e.startWorker(t, 2)
	require.Equal(t, 0, p.wait(t), "stderr:\n%s", p.stderr.String())
	require.Contains(t, p.stderr.String(), "warren: broker reachable again at "+e.b.URL)
	require.Len(t, parseResults(t, p.stdout.String()), 2)
}
