package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// restartable is a broker whose client connection is a reconnecting TCP
// one, as `warren submit` has.
func restartable(t *testing.T) (*bundle, *scheduler.Client) {
	t.Helper()
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	nc, err := broker.Connect(ctx, b.URL, "restart-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c, err := scheduler.New(nc, scheduler.Config{MaxInflight: 4})
	require.NoError(t, err)
	return &bundle{b: b, c: c, ctx: ctx}, c
}

// The broker restarts while a batch is being published: the publisher
// rides through it and every task is stored exactly once.
func TestPublishRidesThroughBrokerRestart(t *testing.T) {
	x, c := restartable(t)
	const n = 4000
	b := mustBatch(t, n, "rs")
	done := make(chan error, 1)
	go func() {
		_, err := c.Publish(x.ctx, b)
		done <- err
	}()
	require.Eventually(t, func() bool {
		return x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("rs")) >= 200
	}, time.Minute, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the publication ended before the restart (%v): the test proves nothing", err)
	default:
	}
	x.b.Restart(t, brokertest.Options{})
	require.NoError(t, <-done)

	msgs := x.storedTasks(t, "rs")
	require.Len(t, msgs, n, "every task stored exactly once")
	seen := map[string]bool{}
	for _, m := range msgs {
		id := m.Headers().Get(messages.HeaderMsgID)
		require.False(t, seen[id], "task %s stored twice", id)
		seen[id] = true
	}
	man, err := c.Manifest(x.ctx, "rs")
	require.NoError(t, err)
	a, _ := man.Attempt(1)
	require.True(t, a.Complete)
}

// A collector waiting for results keeps waiting through a broker restart
// and gets every result once.
func TestCollectRidesThroughBrokerRestart(t *testing.T) {
	x, c := restartable(t)
	const n = 20
	_, err := c.Publish(x.ctx, mustBatch(t, n, "rc"))
	require.NoError(t, err)
	for i := 1; i <= n/2; i++ {
		x.storeResult(t, "rc", 1, fmt.Sprint(i), messages.StatusOK, 0)
	}
	got := make(chan string, 2*n)
	done := make(chan error, 1)
	go func() {
		rep, err := c.Collect(x.ctx, scheduler.CollectOptions{Batch: "rc", OnResult: func(r *messages.Result) error {
			got <- r.TaskID
			return nil
		}})
		if err == nil && !rep.Complete() {
			err = fmt.Errorf("incomplete: %d of %d", rep.Received, rep.Total)
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return len(got) == n/2 }, time.Minute, time.Millisecond)
	x.b.Restart(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(x.ctx, time.Minute)
	defer cancel()
	_, js := x.b.Dial(t, "after-restart")
	for i := n/2 + 1; i <= n; i++ {
		_, err := js.Publish(ctx, messages.ResultSubject("rc", 1, fmt.Sprint(i)), resultJSON(t, "rc", fmt.Sprint(i)))
		require.NoError(t, err)
	}
	require.NoError(t, <-done)
	close(got)
	ids := map[string]bool{}
	for id := range got {
		require.False(t, ids[id], "result %s handed on twice", id)
		ids[id] = true
	}
	require.Len(t, ids, n)
}

// A collector waiting on a broker that stopped and stays away gives up
// once it has been unreachable for RetryFor, with ErrBrokerUnavailable and
// the report so far; OnOutage heard of the outage meanwhile, with less
// and less time left.
func TestCollectGivesUpAfterRetryFor(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := broker.Connect(ctx, b.URL, "give-up-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	notices := make(chan scheduler.Outage, 1000)
	c, err := scheduler.New(nc, scheduler.Config{RetryFor: time.Second, OnOutage: func(o scheduler.Outage) {
		select {
		case notices <- o:
		default:
		}
	}})
	require.NoError(t, err)
	x := &bundle{b: b, c: c, ctx: ctx}
	_, err = c.Publish(ctx, mustBatch(t, 2, "gone"))
	require.NoError(t, err)
	x.storeResult(t, "gone", 1, "1", messages.StatusOK, 0)
	got := make(chan string, 2)
	done := make(chan error, 1)
	var rep *scheduler.CollectReport
	go func() {
		var err error
		rep, err = c.Collect(ctx, scheduler.CollectOptions{Batch: "gone", OnResult: func(r *messages.Result) error { got <- r.TaskID; return nil }})
		done <- err
	}()
	require.Equal(t, "1", <-got)
	b.Server.Stop()
	err = <-done
	require.ErrorIs(t, err, scheduler.ErrBrokerUnavailable)
	require.ErrorContains(t, err, "results of gone: unreachable for 1s")
	require.Equal(t, 1, rep.Received, "the report so far")
	close(notices)
	var seen []scheduler.Outage
	for o := range notices {
		seen = append(seen, o)
	}
	require.NotEmpty(t, seen)
	for i, o := range seen {
		require.False(t, o.Reachable)
		require.False(t, o.Over)
		require.Positive(t, o.Left)
		if i > 0 {
			require.Less(t, o.Left, seen[i-1].Left)
		}
	}
}
