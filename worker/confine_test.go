package worker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// replyTargets are the attacks of issue 10: a task of batch W aiming its
// events at batch V's result, V's task queue, the DLQ, the cancel bucket,
// the JetStream API and V's events.
var replyTargets = []string{
	messages.ResultSubject("V", 1, "v1"),
	messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, "V"),
	messages.DLQSubject("invalid", "V", 1, "v1"),
	"$KV." + messages.BucketCancel + ".V.1",
	"$JS.API.STREAM.PURGE." + messages.StreamResults,
	messages.EventSubject("V", "x"),
}

// subjectWatch receives, in wire order, every message published on some
// subjects (one channel for all: the connection's read loop keeps order).
type subjectWatch struct {
	ch chan *nats.Msg
}

func watchSubjects(t *testing.T, nc *nats.Conn, subjects ...string) *subjectWatch {
	t.Helper()
	w := &subjectWatch{ch: make(chan *nats.Msg, 4096)}
	for _, s := range subjects {
		sub, err := nc.ChanSubscribe(s, w.ch)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	require.NoError(t, nc.Flush())
	return w
}

// eventsUntil counts the events of batch per subject until every subject
// in until has had a terminal event of batch.
func (w *subjectWatch) eventsUntil(t *testing.T, batch string, until ...string) map[string]int {
	t.Helper()
	counts, done := map[string]int{}, map[string]bool{}
	timeout := time.After(time.Minute)
	for len(done) < len(until) {
		select {
		case m := <-w.ch:
			ev, err := messages.DecodeEvent(m.Data)
			if err != nil || ev.Batch != batch || ev.Type == "" {
				continue
			}
			counts[m.Subject]++
			if ev.Terminal() && slices.Contains(until, m.Subject) {
				done[m.Subject] = true
			}
		case <-timeout:
			t.Fatalf("no terminal event on %v; saw %v", until, counts)
		}
	}
	return counts
}

func TestReplyAttacksRefusedAtSubmitAndAtTheWorker(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := scheduler.New(b.Conn, scheduler.Config{})
	require.NoError(t, err)

	// At submit: every attack refused, each on its own line, field reply.
	var attacks []messages.Task
	for _, r := range replyTargets {
		attacks = append(attacks, messages.Task{Kind: messages.KindExec, Shell: "echo attack", Reply: r})
	}
	_, err = scheduler.NewBatch(attacks, scheduler.BatchOptions{Batch: "W"})
	var be *scheduler.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Errors, len(replyTargets))
	for i, le := range be.Errors {
		require.Equal(t, i+1, le.Line)
		var me *messages.Error
		require.ErrorAs(t, le, &me)
		require.Equal(t, messages.CodeReplyForbidden, me.Code, replyTargets[i])
		require.Equal(t, "reply", me.Field)
	}

	// At the worker: the same tasks published raw, bypassing the scheduler,
	// queued ahead of batch V, plus two with replies the rule allows.
	allowed := []string{messages.EventSubject("W", "custom"), "_INBOX.w-listener"}
	seen := watchSubjects(t, b.Conn, append(append([]string{}, replyTargets...), allowed...)...)
	for i, r := range replyTargets {
		task := shTask("W", fmt.Sprintf("w%d", i), "echo attack")
		task.Reply = r
		publish(t, b.JS, task)
	}
	for i, r := range allowed {
		task := shTask("W", fmt.Sprintf("ok%d", i), "echo fine")
		task.Reply = r
		publish(t, b.JS, task)
	}
	startWorker(t, b, "w1", workerOpts{capacity: 1})
	got := collect(t, b.JS, "W", len(replyTargets)+len(allowed), time.Minute)
	for i := range replyTargets {
		r := got[fmt.Sprintf("w%d", i)]
		require.Equal(t, messages.StatusInvalid, r.Status, replyTargets[i])
		require.ErrorIs(t, r.Error, messages.ErrReplyForbidden)
		require.Equal(t, "reply", r.Error.Field)
	}
	for i := range allowed {
		require.Equal(t, messages.StatusOK, got[fmt.Sprintf("ok%d", i)].Status)
	}
	dlq, err := b.JS.Stream(ctx, messages.StreamDLQ)
	require.NoError(t, err)
	info, err := dlq.Info(ctx, jetstream.WithSubjectFilter(messages.DLQReasonFilter("invalid", "W")))
	require.NoError(t, err)
	var letters uint64
	for _, n := range info.State.Subjects {
		letters += n
	}
	require.EqualValues(t, len(replyTargets), letters, "each refused task is dead-lettered")

	// Batch V, submitted normally after them, completes with its own results.
	vb, err := scheduler.NewBatch([]messages.Task{
		{ID: "v1", Kind: messages.KindExec, Shell: "echo one"},
		{ID: "v2", Kind: messages.KindExec, Shell: "echo two"},
	}, scheduler.BatchOptions{Batch: "V"})
	require.NoError(t, err)
	_, err = client.Publish(ctx, vb)
	require.NoError(t, err)
	results := map[string]*messages.Result{}
	rep, err := client.Collect(ctx, scheduler.CollectOptions{Batch: "V", OnResult: func(r *messages.Result) error {
		results[r.TaskID] = r
		return nil
	}})
	require.NoError(t, err)
	require.True(t, rep.Complete())
	require.Empty(t, rep.Foreign)
	require.Equal(t, messages.StatusOK, results["v1"].Status)
	require.Equal(t, "one\n", string(results["v1"].Stdout))
	require.Equal(t, "two\n", string(results["v2"].Stdout))
	require.EqualValues(t, 2, resultCount(t, b.JS, "V"), "only V's own results are stored under V")
	cancels, err := b.JS.KeyValue(ctx, messages.BucketCancel)
	require.NoError(t, err)
	_, err = cancels.Get(ctx, "V.1")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "no task cancelled batch V")

	// No event of W reached a forbidden subject. The allowed tasks ran after
	// the attacks on the same worker connection, so any event sent to a
	// forbidden subject arrived before the allowed ones' exits.
	counts := seen.eventsUntil(t, "W", allowed...)
	for _, s := range replyTargets {
		require.Zero(t, counts[s], "an event of W was published to %s", s)
	}
}
