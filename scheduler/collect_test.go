package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// resultSink records results handed to OnResult.
type resultSink struct {
	mu  sync.Mutex
	ids map[string]int
}

func (s *resultSink) take(r *messages.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]int{}
	}
	s.ids[r.TaskID]++
	return nil
}

func TestCollectWaitsForEveryResultOnce(t *testing.T) {
	x := setup(t)
	const n = 200
	_, err := x.c.Publish(x.ctx, mustBatch(t, n, "col"))
	require.NoError(t, err)
	// Half stored before the collector starts, half while it waits.
	for i := 1; i <= n/2; i++ {
		x.storeResult(t, "col", 1, strconv.Itoa(i), messages.StatusOK, 0)
	}
	sink := &resultSink{}
	done := make(chan struct{})
	var rep *scheduler.CollectReport
	go func() {
		defer close(done)
		rep, err = x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "col", OnResult: sink.take})
	}()
	for i := n/2 + 1; i <= n; i++ {
		st := messages.StatusOK
		if i%10 == 0 {
			st = messages.StatusFailed
		}
		x.storeResult(t, "col", 1, strconv.Itoa(i), st, i%10)
	}
	<-done
	require.NoError(t, err)
	require.True(t, rep.Complete())
	require.Equal(t, n, rep.Total)
	require.Equal(t, 1, rep.Attempt)
	require.Equal(t, n, rep.Received)
	require.Equal(t, n/2/10, rep.Counts[messages.StatusFailed])
	for i := 1; i <= n/2; i++ {
		require.Equal(t, 1, sink.ids[strconv.Itoa(i)], "task %d", i)
	}
}

func TestCollectDeduplicatesByTaskID(t *testing.T) {
	x := setup(t)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 2, "dd"))
	require.NoError(t, err)
	x.storeResult(t, "dd", 1, "1", messages.StatusOK, 0)
	// Same task id stored under a second subject: a misbehaving writer.
	x.storeResultAs(t, "dd", 1, "copy-of-1", "1")
	x.storeResult(t, "dd", 1, "2", messages.StatusOK, 0)
	sink := &resultSink{}
	rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "dd", OnResult: sink.take})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Received)
	require.Equal(t, map[string]int{"1": 1, "2": 1}, sink.ids)
}

// A collector killed mid-batch and started again yields every result.
func TestCollectReattachAfterCrash(t *testing.T) {
	x := setup(t)
	const n = 50
	_, err := x.c.Publish(x.ctx, mustBatch(t, n, "re"))
	require.NoError(t, err)
	for i := 1; i <= 20; i++ {
		x.storeResult(t, "re", 1, strconv.Itoa(i), messages.StatusOK, 0)
	}
	ctx, kill := context.WithCancel(x.ctx)
	seen := 0
	_, err = x.c.Collect(ctx, scheduler.CollectOptions{Batch: "re", OnResult: func(*messages.Result) error {
		seen++
		if seen == 10 {
			kill() // the collector dies mid-batch
		}
		return nil
	}})
	require.ErrorIs(t, err, context.Canceled)
	for i := 21; i <= n; i++ {
		x.storeResult(t, "re", 1, strconv.Itoa(i), messages.StatusOK, 0)
	}
	sink := &resultSink{}
	rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "re", OnResult: sink.take})
	require.NoError(t, err)
	require.True(t, rep.Complete())
	require.Len(t, sink.ids, n)
}

func TestCollectNoWait(t *testing.T) {
	tests := []struct {
		name   string
		stored int
	}{{"none stored", 0}, {"some stored", 3}, {"all stored", 5}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := setup(t)
			_, err := x.c.Publish(x.ctx, mustBatch(t, 5, "nw"))
			require.NoError(t, err)
			for i := 1; i <= tt.stored; i++ {
				x.storeResult(t, "nw", 1, strconv.Itoa(i), messages.StatusOK, 0)
			}
			rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "nw", NoWait: true})
			require.NoError(t, err)
			require.Equal(t, tt.stored, rep.Received)
			require.Equal(t, 5, rep.Total)
			require.Equal(t, tt.stored == 5, rep.Complete())
		})
	}
}

func TestCollectUnknownBatch(t *testing.T) {
	x := setup(t)
	_, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "nope"})
	require.ErrorIs(t, err, scheduler.ErrUnknownBatch)
	// Without waiting, results stored by a client that wrote no manifest are read.
	x.storeResult(t, "nope", 1, "a", messages.StatusOK, 0)
	rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "nope", NoWait: true})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Received)
	require.Equal(t, -1, rep.Total)
}

// A result stored under the batch for an id its manifest does not list (an
// invalid task raw-published onto the batch's subject, say) is reported and
// not counted: counting it would end the wait with a real result missing.
func TestCollectCountsOnlyManifestIDs(t *testing.T) {
	x := setup(t)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 2, "man"))
	require.NoError(t, err)
	m, err := x.c.Manifest(x.ctx, "man")
	require.NoError(t, err)
	a, _ := m.Attempt(1)
	require.Equal(t, []string{"1", "2"}, a.IDs)

	x.storeResult(t, "man", 1, "seq-7", messages.StatusInvalid, -1)
	x.storeResult(t, "man", 1, "1", messages.StatusOK, 0)
	rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "man", NoWait: true})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Received)
	require.False(t, rep.Complete(), "a foreign id does not stand in for task 2")
	require.Len(t, rep.Foreign, 1)
	require.Equal(t, "seq-7", rep.Foreign[0].TaskID)
	require.Equal(t, messages.ResultSubject("man", 1, "seq-7"), rep.Foreign[0].Subject)

	x.storeResult(t, "man", 1, "2", messages.StatusFailed, 1)
	sink := &resultSink{}
	rep, err = x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "man", OnResult: sink.take})
	require.NoError(t, err)
	require.True(t, rep.Complete())
	require.Equal(t, map[string]int{"1": 1, "2": 1}, sink.ids)
	require.Equal(t, 1, rep.Counts[messages.StatusFailed])
	require.Len(t, rep.Foreign, 1)
}

// A batch published with the raw protocol has no manifest: waiting for
// its results does not fail ("no manifest") nor wait forever; the stored
// results are read and the total is reported unknown.
func TestCollectBatchWithoutManifest(t *testing.T) {
	x := setup(t)
	for _, attempt := range []int{1, 2} {
		for _, id := range []string{"a", "b"} {
			x.storeResult(t, "raw", attempt, id, messages.StatusOK, 0)
		}
	}
	var got []string
	rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "raw", OnResult: func(r *messages.Result) error {
		got = append(got, fmt.Sprintf("%s/%d", r.TaskID, r.Attempt))
		return nil
	}})
	require.NoError(t, err)
	require.True(t, rep.NoManifest)
	require.Equal(t, -1, rep.Total)
	require.Equal(t, 2, rep.Attempt, "the latest attempt stored")
	require.Equal(t, []string{"a/2", "b/2"}, got)
	require.False(t, rep.Complete())

	// Only tasks stored so far: zero results, attempt from the task header.
	_, err = x.b.JS.PublishMsg(x.ctx, &nats.Msg{Subject: messages.TaskSubject("default", "default", "rawt"),
		Header: nats.Header{messages.HeaderAttempt: []string{"3"}}, Data: []byte(`{}`)})
	require.NoError(t, err)
	rep, err = x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "rawt"})
	require.NoError(t, err)
	require.Equal(t, 3, rep.Attempt)
	require.Zero(t, rep.Received)
}

// A result whose output a worker put in the outputs object store (too
// large for the message) is collected with its bytes back in place.
func TestCollectLoadsLargeOutputs(t *testing.T) {
	x := setup(t)
	obs, err := x.b.JS.ObjectStore(x.ctx, messages.BucketOutputs)
	require.NoError(t, err)
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	name := messages.OutputObjectName("big", 1, "t1", 7, 1, "stdout")
	_, err = obs.PutBytes(x.ctx, name, []byte(big))
	require.NoError(t, err)
	r := messages.Result{V: messages.Version, TaskID: "t1", Batch: "big", Attempt: 1, Delivery: 1, Status: messages.StatusOK,
		Stderr: messages.Bytes("small"), StdoutObject: name}
	data, err := json.Marshal(&r)
	require.NoError(t, err)
	_, err = x.b.JS.Publish(x.ctx, messages.ResultSubject("big", 1, "t1"), data)
	require.NoError(t, err)

	var got *messages.Result
	_, err = x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "big", NoWait: true, OnResult: func(r *messages.Result) error {
		got = r
		return nil
	}})
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Equal(t, big, string(got.Stdout), "the object's bytes are back in the result")
	require.Empty(t, got.StdoutObject)
	require.Equal(t, "small", string(got.Stderr))
}

// TestCollectMakesAStalledConsumerAgain: a results consumer that delivers
// nothing though results are stored (as an ordered consumer did under
// load: the collection waited for ever) is made again after the last
// result read, and every result is handed on once. Here the first
// consumer delivers the first half and then stalls. The control: with
// every consumer stalled, the collection does not end.
func TestCollectMakesAStalledConsumerAgain(t *testing.T) {
	x := setup(t)
	const n = 20
	_, err := x.c.Publish(x.ctx, mustBatch(t, n, "stall"))
	require.NoError(t, err)
	for i := 1; i <= n; i++ {
		x.storeResult(t, "stall", 1, strconv.Itoa(i), messages.StatusOK, 0)
	}
	firstHalf := func(cfg *jetstream.OrderedConsumerConfig) {
		cfg.FilterSubjects = nil
		for i := 1; i <= n/2; i++ {
			cfg.FilterSubjects = append(cfg.FilterSubjects, messages.ResultSubject("stall", 1, strconv.Itoa(i)))
		}
	}

	// Control: every consumer stalls after the first half.
	x.c.SkewResults(50*time.Millisecond, func(_ int, cfg *jetstream.OrderedConsumerConfig) { firstHalf(cfg) })
	ctx, cancel := context.WithTimeout(x.ctx, 500*time.Millisecond)
	defer cancel()
	rep, err := x.c.Collect(ctx, scheduler.CollectOptions{Batch: "stall"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, n/2, rep.Received, "control: a stalled consumer delivers no more")

	var opened []uint64 // each consumer's start sequence
	x.c.SkewResults(50*time.Millisecond, func(k int, cfg *jetstream.OrderedConsumerConfig) {
		opened = append(opened, cfg.OptStartSeq)
		if k == 0 {
			firstHalf(cfg)
		}
	})
	sink := &resultSink{}
	rep, err = x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "stall", OnResult: sink.take})
	require.NoError(t, err)
	require.True(t, rep.Complete(), "%+v", rep)
	require.Equal(t, n, rep.Received)
	for i := 1; i <= n; i++ {
		require.Equal(t, 1, sink.ids[strconv.Itoa(i)], "task %d", i)
	}
	require.Len(t, opened, 2, "consumers made")
	require.Zero(t, opened[0], "the first from the start")
	require.NotZero(t, opened[1], "the second after the last result read")
}
