package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// The same (batch, id, attempt) published twice under other message ids,
// taken by two workers at once: one run, one result, both messages acked,
// and only the run's events on the reply subject (the waiting delivery
// emits none).
func TestSameAttemptUnderTwoMessageIDsRunsOnce(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	counting := &countingRunner{inner: insecureRunner(t)}
	started := make(chan string, 4)
	startWorker(t, b, "wa", workerOpts{runner: counting, started: started})
	startWorker(t, b, "wb", workerOpts{runner: counting, started: started})
	events := subscribeEvents(t, b.Conn, "twice", "t1")

	task := shTask("twice", "t1", "sleep 1; echo once")
	data, err := json.Marshal(task)
	require.NoError(t, err)
	subject := messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, "twice")
	for _, msgID := range []string{"client-a", "client-b"} {
		publishMsg(t, b.JS, subject, data, map[string]string{messages.HeaderMsgID: msgID})
	}
	// Both messages are out at once: one runs, the other is held waiting.
	cons, err := b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName("default", "default"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ci, err := cons.Info(context.Background())
		return err == nil && ci.NumAckPending == 2
	}, 30*time.Second, 10*time.Millisecond, "both deliveries in flight together")

	r := collect(t, b.JS, "twice", 1, time.Minute)["t1"]
	require.Equal(t, messages.StatusOK, r.Status)
	require.Equal(t, "once\n", string(r.Stdout))
	ci := consumerSettled(t, b.JS)
	require.EqualValues(t, 2, ci.Delivered.Consumer, "each message delivered once")
	require.Zero(t, ci.NumRedelivered, "the waiting delivery was held, not redelivered")
	require.EqualValues(t, 1, counting.calls.Load(), "the attempt ran once")
	require.EqualValues(t, 1, resultCount(t, b.JS, "twice"))
	require.Len(t, started, 1)

	events.wait(t, 30*time.Second)
	// The acks follow the result; any event of a second run would precede
	// its ack. None came.
	evs := events.snapshot()
	starts := 0
	for i, e := range evs {
		require.EqualValues(t, i+1, e.Seq, "one gap-free event stream")
		require.Equal(t, r.Delivery, e.Delivery)
		require.Equal(t, r.Host, e.Host)
		if e.Type == messages.EventStarted {
			starts++
		}
		require.Equal(t, i == len(evs)-1, e.Final, "only the last event is final")
	}
	require.Equal(t, 1, starts)

	// A replay is a new attempt, with a claim of its own: it runs.
	task.Attempt = 2
	data, err = json.Marshal(task)
	require.NoError(t, err)
	publishMsg(t, b.JS, subject, data, map[string]string{messages.HeaderMsgID: messages.MsgID("twice", "t1", 2)})
	require.Eventually(t, func() bool { return resultCount(t, b.JS, "twice") == 2 }, time.Minute, 10*time.Millisecond)
	require.EqualValues(t, 2, counting.calls.Load(), "the replay ran")
}

// putClaim stores a claim as a worker would, with a per-key TTL.
func putClaim(t *testing.T, js jetstream.JetStream, batch, id, host string, ttl time.Duration) {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), messages.BucketClaims)
	require.NoError(t, err)
	val, err := json.Marshal(messages.Claim{Host: host, StreamSeq: 999, Delivery: 1, Time: time.Now().UTC()})
	require.NoError(t, err)
	_, err = kv.Create(context.Background(), messages.ClaimKey(batch, 1, id), val, jetstream.KeyTTL(ttl))
	require.NoError(t, err)
}

// A claim left by a worker that died (it stops refreshing) expires and the
// attempt is taken over; until then nobody runs it.
func TestStaleClaimOfDeadWorkerIsTakenOver(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	const ttl = 2 * time.Second
	claimed := time.Now()
	putClaim(t, b.JS, "stale", "t1", "ghost", ttl)
	startWorker(t, b, "w1", workerOpts{})
	publish(t, b.JS, execTask("stale", "t1", "true"))
	r := collect(t, b.JS, "stale", 1, time.Minute)["t1"]
	require.Equal(t, messages.StatusOK, r.Status)
	require.Equal(t, "w1", r.Host)
	require.GreaterOrEqual(t, r.StartedAt.Sub(claimed), ttl, "it waited for the dead worker's claim to expire")
	require.Equal(t, 1, r.Delivery, "the delivery waited; it was not redelivered")
}

// A claim naming this worker's host that no run here holds is left over
// from an earlier life of the worker: taken over at once.
func TestOwnLeftoverClaimIsTakenOverAtOnce(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	putClaim(t, b.JS, "own", "t1", "w1", time.Hour)
	startWorker(t, b, "w1", workerOpts{})
	publish(t, b.JS, execTask("own", "t1", "true"))
	r := collect(t, b.JS, "own", 1, 30*time.Second)["t1"]
	require.Equal(t, messages.StatusOK, r.Status)
	require.Equal(t, "w1", r.Host)
}

// A run whose claim was taken by another run stops (never two runs at
// once); its message comes back, waits for the other run's result and is
// acked without running again.
func TestRunThatLosesItsClaimStops(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	counting := &countingRunner{inner: insecureRunner(t)}
	started := make(chan string, 4)
	startWorker(t, b, "w1", workerOpts{runner: counting, started: started, ackWait: 3 * time.Second})
	events := subscribeEvents(t, b.Conn, "lost", "t1")
	publish(t, b.JS, shTask("lost", "t1", "sleep 60"))
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("task did not start")
	}
	// Another run takes the attempt over, as if w1's claim had expired.
	kv, err := b.JS.KeyValue(context.Background(), messages.BucketClaims)
	require.NoError(t, err)
	val, err := json.Marshal(messages.Claim{Host: "usurper", StreamSeq: 7, Delivery: 1, Time: time.Now().UTC()})
	require.NoError(t, err)
	_, err = kv.Put(context.Background(), messages.ClaimKey("lost", 1, "t1"), val)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, e := range events.snapshot() {
			if e.Type == messages.EventError {
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "w1 stopped its run")
	require.Eventually(t, func() bool { return counting.running.Load() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, resultCount(t, b.JS, "lost"), "the stopped run stored no result")

	// The usurper's result arrives: w1's delivery acks without a new run.
	data, err := json.Marshal(messages.Result{V: messages.Version, TaskID: "t1", Batch: "lost", Attempt: 1, Status: messages.StatusOK, Host: "usurper"})
	require.NoError(t, err)
	_, err = b.JS.Publish(context.Background(), messages.ResultSubject("lost", 1, "t1"), data)
	require.NoError(t, err)
	consumerSettled(t, b.JS)
	require.EqualValues(t, 1, counting.calls.Load())
	require.Equal(t, "usurper", collect(t, b.JS, "lost", 1, 10*time.Second)["t1"].Host)
}
