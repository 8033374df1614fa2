package scheduler_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

func TestCancelWritesKeys(t *testing.T) {
	x := setup(t)
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketCancel)
	require.NoError(t, err)
	b, err := scheduler.ReadBatch(strings.NewReader(`{"id":"t7","kind":"exec","argv":["true"]}`+"\n"), scheduler.BatchOptions{Batch: "b1"})
	require.NoError(t, err)
	_, err = x.c.Publish(x.ctx, b)
	require.NoError(t, err)
	tests := []struct {
		name, batch, id, key string
	}{
		{"whole batch", "b1", "", "b1.1"},
		{"one task", "b1", "t7", "b1.1.t7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now().UTC().Add(-time.Second)
			require.NoError(t, x.c.Cancel(x.ctx, tt.batch, 0, tt.id, "user asked"))
			e, err := kv.Get(x.ctx, tt.key)
			require.NoError(t, err)
			var req messages.CancelRequest
			require.NoError(t, json.Unmarshal(e.Value(), &req))
			require.Equal(t, "user asked", req.Reason)
			require.True(t, req.Time.After(before))
		})
	}
	require.ErrorIs(t, x.c.Cancel(x.ctx, "b1", 0, "a.b", ""), messages.ErrInvalidField)
	require.ErrorIs(t, x.c.Cancel(x.ctx, "", 0, "", ""), messages.ErrMissingField)
}

// Cancelling what does not exist is refused and writes nothing: a key for
// an unknown batch would cancel a future batch of that name.
func TestCancelRefusesWhatDoesNotExist(t *testing.T) {
	x := setup(t)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 2, "known"))
	require.NoError(t, err)
	// A batch published with the raw protocol exists through its tasks.
	_, err = x.b.JS.PublishMsg(x.ctx, &nats.Msg{Subject: messages.TaskSubject("default", "default", "raw"),
		Header: nats.Header{messages.HeaderTaskID: []string{"r1"}, messages.HeaderAttempt: []string{"1"}}, Data: []byte(`{}`)})
	require.NoError(t, err)
	tests := []struct {
		name, batch, id string
		attempt         int
		want            error
	}{
		{"unknown batch", "nosuch", "", 0, scheduler.ErrUnknownBatch},
		{"unknown task", "known", "nosuch", 0, scheduler.ErrUnknownTask},
		{"unknown attempt", "known", "", 2, scheduler.ErrUnknownBatch},
		{"unknown task of a raw batch", "raw", "r2", 0, scheduler.ErrUnknownTask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, x.c.Cancel(x.ctx, tt.batch, tt.attempt, tt.id, ""), tt.want)
		})
	}
	require.NoError(t, x.c.Cancel(x.ctx, "raw", 0, "r1", ""))
	require.NoError(t, x.c.Cancel(x.ctx, "known", 0, "2", ""))
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketCancel)
	require.NoError(t, err)
	keys, err := kv.ListKeys(x.ctx)
	require.NoError(t, err)
	var got []string
	for k := range keys.Keys() {
		got = append(got, k)
	}
	require.ElementsMatch(t, []string{"raw.1.r1", "known.1.2"}, got, "only the keys of what exists")
}

func TestReplayMakesNewAttemptKeptApart(t *testing.T) {
	x := setup(t)
	const n = 6
	_, err := x.c.Publish(x.ctx, mustBatch(t, n, "rp"))
	require.NoError(t, err)
	for i := 1; i <= n; i++ {
		x.storeResult(t, "rp", 1, strconv.Itoa(i), messages.StatusFailed, 1)
	}
	rep, err := x.c.Replay(x.ctx, scheduler.ReplayOptions{Batch: "rp"})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Attempt)
	require.Equal(t, n, rep.Total)
	require.Equal(t, n, rep.Stored)

	msgs := x.storedTasks(t, "rp")
	require.Len(t, msgs, 2*n)
	for _, m := range msgs[n:] {
		task, err := messages.DecodeTask(m.Data())
		require.NoError(t, err)
		require.Equal(t, 2, task.Attempt)
		require.Equal(t, "2", m.Headers().Get(messages.HeaderAttempt))
		require.Equal(t, messages.MsgID("rp", task.ID, 2), m.Headers().Get(messages.HeaderMsgID))
	}
	// Attempt 2's results live on their own subjects, next to attempt 1's.
	for i := 1; i <= n; i++ {
		x.storeResult(t, "rp", 2, strconv.Itoa(i), messages.StatusOK, 0)
	}
	for _, tc := range []struct {
		attempt int
		status  messages.Status
	}{{1, messages.StatusFailed}, {2, messages.StatusOK}, {0, messages.StatusOK}} {
		rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "rp", Attempt: tc.attempt})
		require.NoError(t, err)
		require.Equal(t, n, rep.Received)
		require.Equal(t, n, rep.Counts[tc.status], "attempt %d", tc.attempt)
	}
}

func TestReplayRanges(t *testing.T) {
	x := setup(t)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 10, "rr"))
	require.NoError(t, err)
	msgs := x.storedTasks(t, "rr")
	md3, err := msgs[2].Metadata()
	require.NoError(t, err)
	md5, err := msgs[4].Metadata()
	require.NoError(t, err)
	md8, err := msgs[7].Metadata()
	require.NoError(t, err)

	tests := []struct {
		name        string
		opts        scheduler.ReplayOptions
		wantTotal   int
		wantAttempt int
	}{
		{"sequence range", scheduler.ReplayOptions{FromSeq: md3.Sequence.Stream, ToSeq: md5.Sequence.Stream}, 3, 2},
		// From task 8 on: tasks 8-10 and the 3 messages the first replay added.
		{"open-ended sequence", scheduler.ReplayOptions{FromSeq: md8.Sequence.Stream}, 6, 3},
		{"time range", scheduler.ReplayOptions{Since: md3.Timestamp, Until: md5.Timestamp.Add(time.Nanosecond)}, 3, 4},
		// The whole batch holds 4 attempts now; each id is replayed once.
		{"whole batch", scheduler.ReplayOptions{}, 10, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Batch = "rr"
			rep, err := x.c.Replay(x.ctx, tt.opts)
			require.NoError(t, err)
			require.Equal(t, tt.wantTotal, rep.Total)
			require.Equal(t, tt.wantAttempt, rep.Attempt)
			m, err := x.c.Manifest(x.ctx, "rr")
			require.NoError(t, err)
			a, ok := m.Attempt(rep.Attempt)
			require.True(t, ok)
			require.Equal(t, tt.wantTotal, a.Total)
			require.True(t, a.Complete)
		})
	}
	_, err = x.c.Replay(x.ctx, scheduler.ReplayOptions{Batch: "rr", FromSeq: 1 << 40})
	require.ErrorIs(t, err, scheduler.ErrEmptyBatch)
	_, err = x.c.Replay(x.ctx, scheduler.ReplayOptions{Batch: "never"})
	require.ErrorIs(t, err, scheduler.ErrEmptyBatch)
}

func TestConcurrentReplaysGetDistinctAttempts(t *testing.T) {
	x := setup(t)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 3, "cc"))
	require.NoError(t, err)
	const n = 4
	attempts := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			rep, err := x.c.Replay(x.ctx, scheduler.ReplayOptions{Batch: "cc"})
			if err == nil {
				attempts <- rep.Attempt
			}
		})
	}
	wg.Wait()
	close(attempts)
	got := map[int]bool{}
	for a := range attempts {
		got[a] = true
	}
	require.Equal(t, map[int]bool{2: true, 3: true, 4: true, 5: true}, got)
}

func TestHostsListsRegistry(t *testing.T) {
	x := setup(t)
	hosts, err := x.c.Hosts(x.ctx)
	require.NoError(t, err)
	require.Empty(t, hosts)
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketHosts)
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Second)
	in := []messages.HostInfo{
		{ID: "h2", Pool: "default", Capacity: 8, Free: 3, Isolation: []messages.Isolation{messages.IsolationNamespace}, Profiles: []string{"default"}, Version: "v1", StartedAt: now, UpdatedAt: now},
		{ID: "h1", Pool: "default", Capacity: 4, Free: 4, Isolation: []messages.Isolation{messages.IsolationLandlock}, Profiles: []string{"default", "lean"}, Version: "v1", StartedAt: now, UpdatedAt: now},
		{ID: "h0", Pool: "gpu", Capacity: 1, Version: "v1", StartedAt: now, UpdatedAt: now},
	}
	for _, h := range in {
		data, err := json.Marshal(&h)
		require.NoError(t, err)
		_, err = kv.Put(x.ctx, h.ID, data)
		require.NoError(t, err)
	}
	_, err = kv.Put(x.ctx, "garbage", []byte("not json"))
	require.NoError(t, err)
	// A host that deregistered leaves a delete marker, which is no host.
	_, err = kv.Put(x.ctx, "gone", []byte(`{"id":"gone","pool":"default"}`))
	require.NoError(t, err)
	require.NoError(t, kv.Delete(x.ctx, "gone"))

	// One batch read, whatever the number of hosts: no consumer, no get
	// per key.
	spy := apiSpy(t, x.b.URL, "$JS.API.>")
	hosts, err = x.c.Hosts(x.ctx)
	require.NoError(t, err)
	require.Equal(t, []messages.HostInfo{in[1], in[0], in[2]}, hosts)
	require.Equal(t, []string{"$JS.API.DIRECT.GET.KV_warren_hosts"}, spy.subjects(t, 1))

	// The key-by-key read (servers without batch gets) finds the same.
	listed, err := x.c.HostsListed(x.ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, hosts, listed)
}

func TestProgressPlainLines(t *testing.T) {
	var out syncbuf.Buffer
	off := false
	p := scheduler.NewProgress(&out, 4, scheduler.ProgressOptions{Label: "batch b1", Interval: 5 * time.Millisecond, Terminal: &off})
	p.Add(messages.StatusOK)
	p.Add(messages.StatusFailed)
	p.Add(messages.StatusOK)
	require.Eventually(t, func() bool {
		return bytes.Contains([]byte(out.String()), []byte("batch b1: 3/4 done (ok 2, failed 1), "))
	}, 10*time.Second, 5*time.Millisecond)
	require.Contains(t, out.String(), "ETA ")
	p.Add(messages.StatusTimedOut)
	p.Close()
	p.Close()
	lines := bytes.Split(bytes.TrimSpace([]byte(out.String())), []byte("\n"))
	require.Regexp(t, `^batch b1: 4/4 done \(ok 2, failed 1, timed_out 1\), [0-9.]+/s, took `, string(lines[len(lines)-1]))
}

func TestProgressBarOnTerminal(t *testing.T) {
	var out syncbuf.Buffer
	on := true
	p := scheduler.NewProgress(&out, -1, scheduler.ProgressOptions{Label: "b2", Terminal: &on})
	p.SetTotal(2) // known only once the manifest is read
	p.Add(messages.StatusOK)
	p.Add(messages.StatusCancelled)
	p.Close()
	require.Contains(t, out.String(), "2/2")
	require.Contains(t, out.String(), "cancelled 1")
}

func TestCollectFeedsProgress(t *testing.T) {
	x := setup(t)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 3, "pg"))
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		x.storeResult(t, "pg", 1, strconv.Itoa(i), messages.StatusOK, 0)
	}
	var out syncbuf.Buffer
	off := false
	p := scheduler.NewProgress(&out, -1, scheduler.ProgressOptions{Label: "pg", Interval: time.Hour, Terminal: &off})
	_, err = x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "pg", Progress: p})
	require.NoError(t, err)
	p.Close()
	require.Contains(t, out.String(), "pg: 3/3 done (ok 3)")
}
