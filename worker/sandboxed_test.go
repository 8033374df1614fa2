package worker_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// sandboxedRunner is a real sandbox runner (auto: namespaces with the
// Landlock layer on this host) with prestart warm sandboxes, closed at the
// end of the test.
func sandboxedRunner(t testing.TB, prestart int) *sandbox.Runner {
	t.Helper()
	// The sandbox uid of a root worker must reach its scratch: t.TempDir's
	// parent is 0700.
	root, err := os.MkdirTemp("", "warren-worker-sandbox-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o711))
	r, err := sandbox.New(sandbox.Config{ScratchRoot: root, InitPath: testInitPath, Prestart: prestart})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, os.RemoveAll(root))
	})
	require.NoError(t, r.Start(context.Background()))
	return r
}

// sandboxedTaskCount is how many tasks TestTrivialTasksAtSmallMemoryLimits
// runs: WARREN_TEST_SANDBOXED_TASKS, else 400 (set thousands to look for
// a rarer failure).
func sandboxedTaskCount(t *testing.T) int {
	if s := os.Getenv("WARREN_TEST_SANDBOXED_TASKS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}
	return 400
}

// TestTrivialTasksAtSmallMemoryLimitsNeverFail: trivial tasks at a 256 MiB
// memory limit, run by a worker through real sandboxes (warm and cold),
// all end ok on their first delivery: no setup failure (which would be
// retried: delivery > 1) and no false failure of the task (the sandbox
// init's own memory is never bound by the task's limit).
func TestTrivialTasksAtSmallMemoryLimitsNeverFail(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	// A second delivery is then a setup failure's retry, never an AckWait
	// run out on a loaded host before the first heartbeat.
	startWorker(t, b, "w1", workerOpts{capacity: 2, runner: sandboxedRunner(t, 2), maxDeliver: 5, ackWait: time.Minute,
		isolation: []messages.Isolation{messages.IsolationAuto}})
	n := sandboxedTaskCount(t)
	tasks := make([]messages.Task, 0, n)
	for _, id := range ids(n) {
		task := execTask("mem256", id, "/bin/sh", "-c", "echo ok")
		task.Limits.MemoryBytes = 256 << 20
		tasks = append(tasks, task)
	}
	start := time.Now()
	publish(t, b.JS, tasks...)
	got := collect(t, b.JS, "mem256", n, 10*time.Minute)
	t.Logf("%d tasks in %s", n, time.Since(start).Round(time.Millisecond))
	var setup, failed int
	for _, id := range ids(n) {
		r := got[id]
		require.NotNil(t, r, id)
		if r.Delivery > 1 || r.Status == messages.StatusInfraError {
			setup++
		}
		if r.Status != messages.StatusOK || string(r.Stdout) != "ok\n" {
			failed++
			t.Errorf("%s: %s exit %d delivery %d stderr %q error %v", id, r.Status, r.ExitCode, r.Delivery, string(r.Stderr), r.Error)
		}
	}
	require.Zero(t, setup, "setup failures (retried deliveries)")
	require.Zero(t, failed, "tasks that did not end ok")
}

// TestCommandNotFoundFailsAtOnce: a command that does not exist (or cannot
// be executed) is the task's failure: stored failed with exit 127 (126) on
// its first delivery, with the reason in the result's error and stderr,
// never retried as an infrastructure error. The control runs.
func TestCommandNotFoundFailsAtOnce(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "w1", workerOpts{capacity: 2, runner: sandboxedRunner(t, 0), maxDeliver: 5,
		isolation: []messages.Isolation{messages.IsolationAuto}})
	// (Validation refuses an argument over the kernel's limit before it
	// reaches a worker; the sandbox tests cover E2BIG.)
	script := execTask("exec", "not-executable", "./script")
	script.Files = map[string]messages.Bytes{"script": messages.Bytes("#!/bin/sh\necho ran\n")} // written 0644
	publish(t, b.JS,
		execTask("exec", "control", "/bin/echo", "ran"),
		execTask("exec", "missing", "nosuchcmd"),
		execTask("exec", "missing-path", "/nonexistent/cmd"),
		script,
	)
	got := collect(t, b.JS, "exec", 4, time.Minute)
	require.Equal(t, messages.StatusOK, got["control"].Status)
	require.Equal(t, "ran\n", string(got["control"].Stdout))
	require.Nil(t, got["control"].Error)
	for id, want := range map[string]struct {
		code   int
		stderr string
	}{
		"missing":        {127, "warren: nosuchcmd: command not found\n"},
		"missing-path":   {127, "warren: /nonexistent/cmd: cannot execute: no such file or directory\n"},
		"not-executable": {126, "warren: ./script: cannot execute: permission denied\n"},
	} {
		r := got[id]
		require.Equal(t, messages.StatusFailed, r.Status, id)
		require.Equal(t, want.code, r.ExitCode, id)
		require.Equal(t, 1, r.Delivery, "%s: no redelivery", id)
		require.Equal(t, want.stderr, string(r.Stderr), id)
		require.NotNil(t, r.Error, id)
		require.Equal(t, messages.CodeExecFailed, r.Error.Code, id)
		require.Equal(t, strings.TrimPrefix(strings.TrimSuffix(want.stderr, "\n"), "warren: "), r.Error.Msg, id)
	}
	require.EqualValues(t, 4, resultCount(t, b.JS, "exec"), "one result each")
}

// TestLimitOverrunsAreReportedThroughTheWorker: a CPU-time overrun is
// timed_out with timeout "cpu" (not killed), a wall overrun "wall", and a
// task whose child was OOM-killed ends ok with oom_kills where the sandbox
// has a cgroup; the control has neither.
func TestLimitOverrunsAreReportedThroughTheWorker(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	runner := sandboxedRunner(t, 0)
	probe, err := runner.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}})
	require.NoError(t, err)
	cgroup := strings.HasPrefix(probe.ResourceLimits, "cgroup")
	startWorker(t, b, "w1", workerOpts{capacity: 2, runner: runner, isolation: []messages.Isolation{messages.IsolationAuto}})

	control := shTask("lim", "control", "echo ok")
	control.Limits.CPUTimeMS = 1000
	cpu := shTask("lim", "cpu", "while :; do :; done")
	cpu.Limits.CPUTimeMS, cpu.Limits.WallTimeoutMS = 1000, 20_000
	wall := shTask("lim", "wall", "sleep 30")
	wall.Limits.WallTimeoutMS = 300
	oom := execTask("lim", "oom", "/usr/bin/python3", "-c",
		`import subprocess, sys; subprocess.run([sys.executable, "-c", "b = bytearray(1 << 30); b[::4096] = b'x' * len(b[::4096])"])`)
	oom.Limits.MemoryBytes = 256 << 20
	publish(t, b.JS, control, cpu, wall, oom)
	got := collect(t, b.JS, "lim", 4, time.Minute)

	require.Equal(t, messages.StatusOK, got["control"].Status)
	require.Empty(t, got["control"].Timeout)
	require.Zero(t, got["control"].OOMKills)
	require.Equal(t, messages.StatusTimedOut, got["cpu"].Status, "%+v", got["cpu"])
	require.Equal(t, messages.TimeoutCPU, got["cpu"].Timeout)
	require.Equal(t, messages.StatusTimedOut, got["wall"].Status)
	require.Equal(t, messages.TimeoutWall, got["wall"].Timeout)
	require.Equal(t, messages.StatusOK, got["oom"].Status, "the command itself exits 0: %+v", got["oom"])
	if cgroup {
		require.Equal(t, 1, got["oom"].OOMKills, "the child's OOM kill is in the result")
	} else {
		require.Zero(t, got["oom"].OOMKills, "no cgroup: RLIMIT_AS refuses the allocation, nothing is killed")
	}
}
