package worker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/worker"
)

// countingRunner wraps a runner and measures how many runs overlap.
type countingRunner struct {
	inner   worker.Runner
	running atomic.Int64
	peak    atomic.Int64
	calls   atomic.Int64
}

func (c *countingRunner) Run(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	c.calls.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return c.inner.Run(ctx, s)
}

// insecureRunner runs tasks without isolation: these tests are about the
// queue, not the sandbox (the sandbox package proves isolation).
func insecureRunner(t testing.TB) *sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.NoError(t, r.Start(context.Background()))
	return r
}

type workerOpts struct {
	started    chan<- string // worker.OnTaskStarted
	capacity   int
	runner     worker.Runner
	ackWait    time.Duration
	maxDeliver int
	profiles   []string             // Config.ExecProfiles; default one
	unix       []string             // Config.UnixSocketProfiles
	pullWait   time.Duration        // Config.PullWait; default 500ms
	sealKey    nkeys.KeyPair        // Config.SealKey
	logTo      io.Writer            // debug-level log sink; default the test log at warn
	isolation  []messages.Isolation // Config.Isolation; default none
	metrics    prometheus.Registerer
	rotateWait time.Duration   // parked pulls' turns with more profiles than slots; default the worker's
	ceilings   messages.Limits // Config.Ceilings
	// beforeStore runs before each result is stored (worker.SetBeforeStore).
	beforeStore func(*messages.Result)
}

func startWorker(t testing.TB, b *brokertest.Broker, name string, o workerOpts) *worker.Worker {
	t.Helper()
	nc, _ := b.Dial(t, name)
	if o.runner == nil {
		o.runner = insecureRunner(t)
	}
	logger := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if o.logTo != nil {
		logger = zerolog.New(o.logTo).Level(zerolog.DebugLevel)
	}
	if o.isolation == nil {
		o.isolation = []messages.Isolation{messages.IsolationNone}
	}
	w, err := worker.New(nc, worker.Config{
		HostID:             name,
		Capacity:           max(o.capacity, 1),
		Runner:             o.runner,
		ExecProfiles:       o.profiles,
		UnixSocketProfiles: o.unix,
		Isolation:          o.isolation,
		Consumer:           broker.ConsumerConfig{AckWait: max(o.ackWait, 3*time.Second), MaxDeliver: o.maxDeliver},
		PullWait:           cmp.Or(o.pullWait, 500*time.Millisecond),
		RetryBase:          50 * time.Millisecond,
		Logger:             logger,
		SealKey:            o.sealKey,
		Ceilings:           o.ceilings,

		Metrics: o.metrics,
	}, worker.OnTaskStarted(o.started))
	require.NoError(t, err)
	if o.rotateWait > 0 {
		worker.SetRotateWait(w, o.rotateWait)
	}
	if o.beforeStore != nil {
		worker.SetBeforeStore(w, o.beforeStore)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

func execTask(batch, id string, argv ...string) messages.Task {
	return messages.Task{V: messages.Version, ID: id, Batch: batch, Attempt: 1, Kind: messages.KindExec, Argv: argv}
}

func shTask(batch, id, script string) messages.Task {
	return messages.Task{V: messages.Version, ID: id, Batch: batch, Attempt: 1, Kind: messages.KindExec, Shell: script}
}

// publish puts tasks on the queue the way the scheduler does.
func publish(t testing.TB, js jetstream.JetStream, tasks ...messages.Task) {
	t.Helper()
	ctx := context.Background()
	for _, task := range tasks {
		data, err := json.Marshal(task)
		require.NoError(t, err)
		publishRaw(t, js, task.Batch, task.ID, data)
	}
	_ = ctx
}

func publishRaw(t testing.TB, js jetstream.JetStream, batch, id string, data []byte) {
	t.Helper()
	msg := &nats.Msg{Subject: messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, batch), Data: data, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMsgID, messages.MsgID(batch, id, 1))
	msg.Header.Set(messages.HeaderTaskID, id)
	msg.Header.Set(messages.HeaderBatch, batch)
	msg.Header.Set(messages.HeaderAttempt, "1")
	_, err := js.PublishMsg(context.Background(), msg)
	require.NoError(t, err)
}

// collect reads results of a batch from RESULTS until n distinct ids are
// in, failing after timeout. It also fails on a duplicate result for an id.
func collect(t testing.TB, js jetstream.JetStream, batch string, n int, timeout time.Duration) map[string]*messages.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := js.OrderedConsumer(ctx, messages.NamespaceOf(batch).Results(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{messages.BatchResultFilter(batch, 0)},
	})
	require.NoError(t, err)
	got := map[string]*messages.Result{}
	for len(got) < n {
		msg, err := c.Next(jetstream.FetchContext(ctx))
		require.NoError(t, err, "waiting for results of %s: have %d of %d", batch, len(got), n)
		r, err := messages.DecodeResult(msg.Data())
		require.NoError(t, err)
		_, dup := got[r.TaskID]
		require.False(t, dup, "second result for %s", r.TaskID)
		got[r.TaskID] = r
	}
	return got
}

// resultCount is the number of stored results of a batch.
func resultCount(t testing.TB, js jetstream.JetStream, batch string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), messages.NamespaceOf(batch).Results())
	require.NoError(t, err)
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(messages.BatchResultFilter(batch, 0)))
	require.NoError(t, err)
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// eventLog subscribes to a task's reply subject and records its events.
type eventLog struct {
	mu     sync.Mutex
	events []*messages.Event
	done   chan struct{}
	once   sync.Once
}

func subscribeEvents(t testing.TB, nc *nats.Conn, batch, id string) *eventLog {
	t.Helper()
	return subscribeSubject(t, nc, messages.EventSubject(batch, id))
}

// subscribeSubject records the events on subject until the final one.
func subscribeSubject(t testing.TB, nc *nats.Conn, subject string) *eventLog {
	t.Helper()
	l := &eventLog{done: make(chan struct{})}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		e, err := messages.DecodeEvent(m.Data)
		if err != nil {
			return
		}
		l.mu.Lock()
		l.events = append(l.events, e)
		l.mu.Unlock()
		if e.Final {
			l.once.Do(func() { close(l.done) })
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return l
}

func (l *eventLog) wait(t testing.TB, d time.Duration) []*messages.Event {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(d):
		t.Fatalf("no final event within %s", d)
	}
	return l.snapshot()
}

func (l *eventLog) snapshot() []*messages.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*messages.Event(nil), l.events...)
}

// publishMsg publishes raw task bytes on subject with the given headers.
func publishMsg(t testing.TB, js jetstream.JetStream, subject string, data []byte, headers map[string]string) uint64 {
	t.Helper()
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	for k, v := range headers {
		msg.Header.Set(k, v)
	}
	ack, err := js.PublishMsg(context.Background(), msg)
	require.NoError(t, err)
	return ack.Sequence
}

// consumerSettled waits until the default consumer has delivered and
// acknowledged everything, and returns its info.
func consumerSettled(t testing.TB, js jetstream.JetStream) *jetstream.ConsumerInfo {
	t.Helper()
	cons, err := js.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName("default", "default"))
	require.NoError(t, err)
	var ci *jetstream.ConsumerInfo
	require.Eventually(t, func() bool {
		ci, err = cons.Info(context.Background())
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	}, 30*time.Second, 20*time.Millisecond, "every delivered task acked")
	return ci
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "t" + strconv.Itoa(i)
	}
	return out
}
