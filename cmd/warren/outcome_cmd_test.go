package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// `submit --wait` and `results` exit 0 only when every task reached an
// outcome of its own: infra_error or cancelled is exitNotRun.
func TestSubmitWaitAndResultsExitStatus(t *testing.T) {
	e := newCLIEnv(t)
	e.fakeWorker(t)
	tests := []struct {
		name   string
		status string // of the last task; the others are ok or failed
		want   int
	}{
		{"failed tasks are outcomes", "failed", 0},
		{"infra error", "infra_error", exitNotRun},
		{"cancelled", "cancelled", exitNotRun},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tasksJSONL(4) + `{"kind":"exec","argv":["true"],"env":{"STATUS":"` + tt.status + `"}}` + "\n"
			batch := "x" + string(rune('a'+i))
			r := e.run(t, in, "submit", "--batch", batch, "--wait")
			require.Equal(t, tt.want, exitStatus(r.err), "%v\n%s", r.err, r.stderr)
			require.Len(t, decodeResults(t, r.stdout), 5, "every result is written whatever the status")
			again := e.run(t, "", "results", batch)
			require.Equal(t, tt.want, exitStatus(again.err), "%v\n%s", again.err, again.stderr)
			if tt.want != 0 {
				require.Contains(t, r.stderr, "1 task(s) did not run to an outcome ("+tt.status+" 1)")
			}
		})
	}
}

// Cancelling an unknown batch or task exits 1 and writes no key.
func TestCancelUnknownWritesNothing(t *testing.T) {
	e := newCLIEnv(t)
	sub := e.run(t, tasksJSONL(2), "submit", "--batch", "ck", "--queue-unserved")
	require.NoError(t, sub.err, sub.stderr)
	for _, args := range [][]string{{"cancel", "nosuch"}, {"cancel", "ck", "nosuch"}, {"cancel", "ck", "--attempt", "2"}} {
		r := e.run(t, "", args...)
		require.Equal(t, exitError, exitStatus(r.err), "%v: %v", args, r.err)
		require.ErrorContains(t, r.err, "nothing cancelled")
		require.NotContains(t, r.stderr, "cancelled batch")
	}
	kv, err := e.b.JS.KeyValue(e.ctx, messages.BucketCancel)
	require.NoError(t, err)
	keys, err := kv.Keys(e.ctx)
	require.ErrorIs(t, err, jetstream.ErrNoKeysFound, "no cancel key written: %v", keys)
}

// A batch published with the raw protocol has no manifest: `results`
// prints what is stored, says the total is unknown and exits
// exitIncomplete instead of failing with "no manifest".
func TestResultsOfABatchWithoutManifest(t *testing.T) {
	e := newCLIEnv(t)
	for _, id := range []string{"a", "b", "c"} {
		e.storeResult(t, "raw", 1, id)
	}
	r := e.run(t, "", "results", "raw")
	require.Equal(t, exitIncomplete, exitStatus(r.err), "%v", r.err)
	require.Len(t, decodeResults(t, r.stdout), 3)
	require.Contains(t, r.stderr, "batch raw has no manifest")
	require.Contains(t, r.stderr, "the total is unknown")
}

// exec and submit to a pool/profile no live worker serves fail at once,
// naming what is served, and publish nothing; --queue-unserved queues.
func TestUnservedPoolOrProfileFailsFast(t *testing.T) {
	e := newCLIEnv(t)
	e.registerHost(t, "h1", "default", "default", "coq")
	tests := []struct {
		name, stdin string
		args        []string
		missing     string
	}{
		{"exec profile", "", []string{"exec", "--profile", "nosuch", "--", "true"}, "default/nosuch"},
		{"exec pool", "", []string{"exec", "--pool", "gpu", "--", "true"}, "gpu/default"},
		{"submit", `{"kind":"exec","argv":["true"],"profile":"lean"}` + "\n", []string{"submit", "--batch", "un"}, "default/lean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.run(t, tt.stdin, tt.args...)
			require.ErrorContains(t, r.err, "no live worker serves pool/profile "+tt.missing+" (served now: default/coq, default/default); nothing was published")
		})
	}
	s, err := e.b.JS.Stream(e.ctx, messages.StreamTasks)
	require.NoError(t, err)
	info, err := s.Info(e.ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "nothing published")

	q := e.run(t, `{"kind":"exec","argv":["true"],"profile":"lean"}`+"\n", "submit", "--batch", "un", "--queue-unserved")
	require.NoError(t, q.err)
	require.Contains(t, q.stderr, "the tasks stay queued until one does")
	require.EqualValues(t, 1, e.taskCount(t, "un"))
}

// A refused batch's problems, all of them and in line order, go to
// --errors; stderr lists the first 20.
func TestSubmitErrorsFileHasEveryProblemInLineOrder(t *testing.T) {
	e := newCLIEnv(t)
	var in strings.Builder
	for i := range 30 {
		if i%2 == 0 {
			in.WriteString("not json\n")
		} else {
			in.WriteString(`{"kind":"exec","argv":["x"],"cwd":"/abs"}` + "\n")
		}
	}
	errFile := filepath.Join(t.TempDir(), "errors.txt")
	r := e.run(t, in.String(), "submit", "--batch", "many", "--errors", errFile)
	require.ErrorContains(t, r.err, "... and 10 more")
	require.ErrorContains(t, r.err, "every problem is in "+errFile)
	data, err := os.ReadFile(errFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 30)
	for i, l := range lines {
		require.True(t, strings.HasPrefix(l, "line "+strconv.Itoa(i+1)+": "), l)
	}
	for _, args := range [][]string{{"submit", "--out", "x.jsonl"}, {"replay", "many", "--out", "x.jsonl"}} {
		out := e.run(t, "", args...)
		require.ErrorContains(t, out.err, "--out names where --wait writes the results", "an ignored flag is refused: %v", args)
	}
}
