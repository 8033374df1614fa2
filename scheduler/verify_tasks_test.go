package scheduler_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/internal/syncbuf"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// expectedVerdicts reads examples/coq/expected.jsonl, the truth of the
// demo batch: 3 accepted, 6 rejected.
func expectedVerdicts(t *testing.T) []*messages.Result {
	t.Helper()
	f, err := os.Open("../examples/coq/expected.jsonl")
	require.NoError(t, err)
	defer f.Close()
	var rs []*messages.Result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			ID       string          `json:"id"`
			Accepted bool            `json:"accepted"`
			Reason   messages.Reason `json:"reason"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		rs = append(rs, &messages.Result{TaskID: e.ID, Status: messages.StatusOK, Verdict: &messages.Verdict{Accepted: e.Accepted, Reason: e.Reason}})
	}
	require.NoError(t, sc.Err())
	require.Len(t, rs, 9)
	return rs
}

// A checked proof counts as accepted or rejected, never as "ok": the demo
// batch's 9 results are 3 accepted and 6 rejected, and a task that reached
// no verdict is counted by its status beside them.
func TestProgressCountsVerdicts(t *testing.T) {
	t.Parallel()
	var out syncbuf.Buffer
	off := false
	p := scheduler.NewProgress(&out, 10, scheduler.ProgressOptions{Label: "verify", Interval: time.Hour, Terminal: &off})
	for _, r := range expectedVerdicts(t) {
		p.AddResult(r)
	}
	p.AddResult(&messages.Result{TaskID: "lost", Status: messages.StatusInfraError})
	p.Close()
	require.Regexp(t, `^verify: 10/10 done \(3 accepted, 6 rejected, 1 infra_error\), [0-9.]+/s, took `, out.String())

	// Without verdicts (exec tasks), counts stay by status.
	var plain syncbuf.Buffer
	p = scheduler.NewProgress(&plain, 3, scheduler.ProgressOptions{Label: "b", Interval: time.Hour, Terminal: &off})
	p.AddResult(&messages.Result{Status: messages.StatusOK})
	p.AddResult(&messages.Result{Status: messages.StatusOK})
	p.AddResult(&messages.Result{Status: messages.StatusFailed})
	p.Close()
	require.Regexp(t, `^b: 3/3 done \(ok 2, failed 1\), `, plain.String())

	// The bar describes the same counts.
	var bar syncbuf.Buffer
	on := true
	p = scheduler.NewProgress(&bar, 9, scheduler.ProgressOptions{Label: "verify", Terminal: &on})
	for _, r := range expectedVerdicts(t) {
		p.AddResult(r)
	}
	p.Close()
	require.Contains(t, bar.String(), "verify 3 accepted, 6 rejected")
}

// ReplayOptions.NoCache sets verify.no_cache on every replayed verify
// task (the verdict cache would answer a replay of a decided proof), and
// leaves exec tasks and the stored attempt alone; without it the replay
// carries the tasks as stored.
func TestReplayNoCache(t *testing.T) {
	t.Parallel()
	x := setup(t)
	in := `{"id":"p","kind":"verify","profile":"coq","verify":{"theorem":"t","statement":"True","proof":"Theorem t : True. Proof. exact I. Qed."}}
{"id":"e","kind":"exec","argv":["true"]}
`
	b, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: "nc"})
	require.NoError(t, err)
	_, err = x.c.Publish(x.ctx, b)
	require.NoError(t, err)
	plain, err := x.c.Replay(x.ctx, scheduler.ReplayOptions{Batch: "nc"})
	require.NoError(t, err)
	fresh, err := x.c.Replay(x.ctx, scheduler.ReplayOptions{Batch: "nc", NoCache: true})
	require.NoError(t, err)
	require.Equal(t, 3, fresh.Attempt)

	noCache := map[int]bool{}
	for _, m := range x.storedTasks(t, "nc") {
		task, err := messages.DecodeTask(m.Data())
		require.NoError(t, err)
		if task.Verify == nil {
			require.Equal(t, "e", task.ID)
			continue
		}
		noCache[task.Attempt] = task.Verify.NoCache
	}
	require.Equal(t, map[int]bool{1: false, plain.Attempt: false, fresh.Attempt: true}, noCache)
}
