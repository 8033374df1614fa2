package main

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func (e *cliEnv) storeResult(t *testing.T, batch string, attempt int, id string) {
	t.Helper()
	r := messages.Result{V: messages.Version, TaskID: id, Batch: batch, Attempt: attempt, Delivery: 1, Status: messages.StatusOK}
	data, err := json.Marshal(&r)
	require.NoError(t, err)
	_, err = e.b.JS.Publish(e.ctx, messages.ResultSubject(batch, attempt, id), data)
	require.NoError(t, err)
}

func TestResultsNoWaitThenReattach(t *testing.T) {
	e := newCLIEnv(t)
	sub := e.run(t, tasksJSONL(6), "submit", "--batch", "rb", "--queue-unserved")
	require.NoError(t, sub.err)
	for i := 1; i <= 4; i++ {
		e.storeResult(t, "rb", 1, strconv.Itoa(i))
	}
	partial := e.run(t, "", "results", "rb", "--no-wait")
	require.Equal(t, exitIncomplete, exitStatus(partial.err), "not every task has a result: %v", partial.err)
	require.Len(t, decodeResults(t, partial.stdout), 4)
	require.Contains(t, partial.stderr, "4 of 6 results so far")

	// The scheduler "crashed"; the rest of the results arrive; a new
	// collector gets every one, each once.
	for i := 5; i <= 6; i++ {
		e.storeResult(t, "rb", 1, strconv.Itoa(i))
	}
	full := e.run(t, "", "results", "rb")
	require.NoError(t, full.err, full.stderr)
	require.Len(t, decodeResults(t, full.stdout), 6)
	require.Contains(t, full.stderr, "rb: 6/6 done (ok 6)")
}

func TestResultsUnknownBatch(t *testing.T) {
	e := newCLIEnv(t)
	r := e.run(t, "", "results", "missing")
	require.ErrorContains(t, r.err, "unknown batch")
}

func TestCancelCommand(t *testing.T) {
	e := newCLIEnv(t)
	sub := e.run(t, `{"id":"t1","kind":"exec","argv":["true"]}`+"\n", "submit", "--batch", "cb", "--queue-unserved")
	require.NoError(t, sub.err, sub.stderr)
	kv, err := e.b.JS.KeyValue(e.ctx, messages.BucketCancel)
	require.NoError(t, err)
	tests := []struct {
		name string
		args []string
		key  string
	}{
		{"batch", []string{"cancel", "cb"}, "cb.1"},
		{"task", []string{"cancel", "cb", "t1", "--reason", "wrong input"}, "cb.1.t1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.run(t, "", tt.args...)
			require.NoError(t, r.err)
			entry, err := kv.Get(e.ctx, tt.key)
			require.NoError(t, err)
			var req messages.CancelRequest
			require.NoError(t, json.Unmarshal(entry.Value(), &req))
			require.NotEmpty(t, req.Reason)
		})
	}
}

func TestReplayCommand(t *testing.T) {
	e := newCLIEnv(t)
	e.fakeWorker(t)
	sub := e.run(t, tasksJSONL(5), "submit", "--batch", "rpc", "--wait")
	require.NoError(t, sub.err)
	r := e.run(t, "", "replay", "rpc")
	require.NoError(t, r.err, r.stderr)
	require.Equal(t, "2\n", r.stdout)
	w := e.run(t, "", "replay", "rpc", "--since", "1h", "--wait")
	require.NoError(t, w.err, w.stderr)
	require.Contains(t, w.stderr, "batch rpc attempt 3")
	res := decodeResults(t, w.stdout)
	require.Len(t, res, 5)
	for _, m := range res {
		require.EqualValues(t, 3, m["attempt"])
	}
	// Attempt 1 is untouched by the replays.
	one := e.run(t, "", "results", "rpc", "--attempt", "1")
	require.NoError(t, one.err)
	for _, m := range decodeResults(t, one.stdout) {
		require.EqualValues(t, 1, m["attempt"])
	}
	bad := e.run(t, "", "replay", "rpc", "--since", "yesterday")
	require.ErrorContains(t, bad.err, "--since")
}
