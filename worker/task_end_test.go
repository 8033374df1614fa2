package worker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// endBound is how long after its wall limit a task's end may take, and
// endSlack what a loaded host adds (the sandbox package's own bounds).
const (
	endBound = 2 * time.Second
	endSlack = time.Second
)

// slottedRunner is a real runner (auto) whose warm sandboxes are slots, as
// a worker's are: bounded homes.
func slottedRunner(t *testing.T, prestart int) *sandbox.Runner {
	t.Helper()
	root, err := os.MkdirTemp("", "warren-worker-sandbox-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o711))
	r, err := sandbox.New(sandbox.Config{ScratchRoot: root, InitPath: testInitPath, Prestart: prestart, Defaults: sandbox.Limits{Disk: sandbox.DefaultDisk}})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, r.Close())
		require.NoError(t, os.RemoveAll(root))
	})
	require.NoError(t, r.Start(context.Background()))
	return r
}

// TestTricksHoldNeitherSlotsNorTheDrain: two tasks whose threads make the
// worker's sandbox parent their tracer (the red team's PTRACE_TRACEME)
// fill a capacity-2 worker; both end timed out within endBound of their
// wall limit with nothing of them left, and a harmless task then runs.
// A worker stopped while two more run drains: Stop returns within
// endBound of their limit, their results stored.
func TestTricksHoldNeitherSlotsNorTheDrain(t *testing.T) {
	const wall = time.Second
	b := brokertest.Start(t, brokertest.Options{})
	started := make(chan string, 8)
	w := startWorker(t, b, "w1", workerOpts{capacity: 2, runner: slottedRunner(t, 2), started: started,
		isolation: []messages.Isolation{messages.IsolationAuto}})
	trick := sandboxtest.TrickNamed("traceme-thread")
	marker := fmt.Sprintf("warren-end-worker-%d", time.Now().UnixNano())
	task := func(id string) messages.Task {
		tk := execTask("tricks", id, trick.Argv(marker, true)...)
		tk.Limits.WallTimeoutMS = wall.Milliseconds()
		return tk
	}
	// awaitStarts waits until the tasks ids have started (the echo task's
	// start, signalled too, is not one of the tricks').
	awaitStarts := func(ids ...string) time.Time {
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		for len(want) > 0 {
			select {
			case id := <-started:
				delete(want, id)
			case <-time.After(time.Minute):
				t.Fatalf("the tricks %v did not start", want)
			}
		}
		return time.Now()
	}

	publish(t, b.JS, task("a"), task("b"))
	ran := awaitStarts("a", "b")
	publish(t, b.JS, execTask("tricks", "echo", "/bin/echo", "ok"))
	got := collect(t, b.JS, "tricks", 3, time.Minute)
	for _, id := range []string{"a", "b"} {
		require.Equal(t, messages.StatusTimedOut, got[id].Status, "%s: %+v", id, got[id])
		require.Contains(t, string(got[id].Stdout), trick.Evidence)
		require.WithinDuration(t, ran, got[id].FinishedAt, wall+endBound+endSlack, "%s: its result after its wall limit", id)
	}
	require.Equal(t, messages.StatusOK, got["echo"].Status, "%+v", got["echo"])
	require.Equal(t, "ok\n", string(got["echo"].Stdout), "a slot was free for the next task")
	require.Empty(t, sandboxtest.MarkerProcs(marker))

	publish(t, b.JS, task("c"), task("d"))
	ran = awaitStarts("c", "d")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, w.Stop(ctx), "the worker drains")
	require.WithinDuration(t, ran, time.Now(), wall+endBound+endSlack, "the drain waited for the tricks' ends only")
	got = collect(t, b.JS, "tricks", 5, time.Minute)
	for _, id := range []string{"c", "d"} {
		require.Equal(t, messages.StatusTimedOut, got[id].Status, "%s: %+v", id, got[id])
	}
	require.Empty(t, sandboxtest.MarkerProcs(marker))
}
