package scheduler_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// bigBatchSize is the batch TestBigBatchPublishesAndCollects publishes:
// WARREN_BIG_BATCH (docs/benchmarks.md records a run of 1,000,000), else
// 30,000, which takes the default chunking path.
func bigBatchSize(t *testing.T) int {
	if s := os.Getenv("WARREN_BIG_BATCH"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "WARREN_BIG_BATCH")
		return n
	}
	return 30_000
}

// A batch of many tasks publishes whole (its ids in chunks of the
// manifest's bucket, at the default sizes) and collects: a fake worker
// answers each task with an ok result as fast as it reads them.
func TestBigBatchPublishesAndCollects(t *testing.T) {
	n := bigBatchSize(t)
	x := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	start := time.Now()
	b := mustBatch(t, n, "big")
	built := time.Since(start)

	start = time.Now()
	rep, err := x.c.Publish(ctx, b)
	require.NoError(t, err)
	published := time.Since(start)
	require.Equal(t, n, rep.Stored)
	m, err := x.c.Manifest(ctx, "big")
	require.NoError(t, err)
	a, _ := m.Attempt(1)
	require.True(t, a.Complete)
	require.Positive(t, a.IDChunks)

	answered := make(chan error, 1)
	go func() { answered <- x.answerAll(ctx, "big", n) }()
	start = time.Now()
	type collection struct {
		rep *scheduler.CollectReport
		err error
	}
	collecting := make(chan collection, 1)
	go func() {
		got, err := x.c.Collect(ctx, scheduler.CollectOptions{Batch: "big"})
		collecting <- collection{got, err}
	}()
	var c collection
	select {
	case c = <-collecting:
		require.NoError(t, <-answered)
	case err := <-answered:
		// A fake worker that failed leaves results missing: the
		// collection would wait for them for ever.
		require.NoError(t, err, "the fake worker")
		c = <-collecting
	}
	got, err := c.rep, c.err
	require.NoError(t, err)
	collected := time.Since(start)
	require.Equal(t, n, got.Received)
	require.Equal(t, n, got.Counts[messages.StatusOK])
	require.Empty(t, got.Foreign)
	t.Logf("%d tasks: batch built in %v, published in %v (%d id chunks), answered and collected in %v",
		n, built.Round(time.Millisecond), published.Round(time.Millisecond), a.IDChunks, collected.Round(time.Millisecond))
}

// answerAll is a fake worker: it reads the batch's n tasks from the task
// stream and stores an ok result for each. Results are published
// asynchronously, and each one whose publication failed (a loaded broker
// times an ack out, or stalls the publisher) is published again, as a
// worker's store retries.
func (x *bundle) answerAll(ctx context.Context, batch string, n int) error {
	cons, err := x.b.JS.OrderedConsumer(ctx, messages.StreamTasks, jetstream.OrderedConsumerConfig{FilterSubjects: []string{messages.BatchTaskFilter(batch)}})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	pending := make([]jetstream.PubAckFuture, 0, n)
	for range n {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return err
		}
		id := msg.Headers().Get(messages.HeaderTaskID)
		r := messages.Result{V: messages.Version, TaskID: id, Batch: batch, Attempt: 1, Delivery: 1, Status: messages.StatusOK}
		data, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		f, err := x.b.JS.PublishAsync(messages.ResultSubject(batch, 1, id), data)
		if err != nil {
			// Too many acks outstanding on a loaded broker (the stall):
			// this one is stored synchronously, as a worker's store
			// retries.
			if _, err := retryPublish(ctx, x.b.JS, messages.ResultSubject(batch, 1, id), data); err != nil {
				return err
			}
			continue
		}
		pending = append(pending, f)
	}
	for _, f := range pending {
		select {
		case <-f.Ok():
			continue
		case <-f.Err():
		case <-ctx.Done():
			return ctx.Err()
		}
		m := f.Msg()
		if _, err := retryPublish(ctx, x.b.JS, m.Subject, m.Data); err != nil {
			return err
		}
	}
	return nil
}

// retryPublish publishes data on subject until the stream acks it or ctx
// ends.
func retryPublish(ctx context.Context, js jetstream.JetStream, subject string, data []byte) (*jetstream.PubAck, error) {
	for {
		ack, err := js.Publish(ctx, subject, data)
		if err == nil || ctx.Err() != nil {
			return ack, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
