package worker_test

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/worker"
)

// sessionHost is a worker serving sessions, on a connection of its own.
type sessionHost struct {
	w    *worker.Worker
	s    *worker.Sessions
	nc   *nats.Conn
	root string // the session homes' directory
}

type sessionOpts struct {
	capacity int
	sweep    time.Duration
	idle     time.Duration
	started  chan<- string
	pullWait time.Duration // default 500ms
	metrics  prometheus.Registerer
	runner   worker.Runner // default sandboxedRunner (isolated, one warm sandbox)
	// beforeWaiting runs in a pull loop holding a slot before its
	// waiting fetch registers (worker.SetBeforeWaiting).
	beforeWaiting func()
	profiles      []string // exec profiles; default ["default"]
	rotateWait    time.Duration
}

func startSessionHost(t testing.TB, b *brokertest.Broker, name string, o sessionOpts) *sessionHost {
	t.Helper()
	nc, _ := b.Dial(t, name)
	if o.runner == nil {
		o.runner = sandboxedRunner(t, 1)
	}
	logger := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	w, err := worker.New(nc, worker.Config{
		HostID: name, Capacity: max(o.capacity, 1), Runner: o.runner,
		Isolation: []messages.Isolation{messages.IsolationAuto},
		Consumer:  broker.ConsumerConfig{AckWait: 3 * time.Second}, PullWait: cmp.Or(o.pullWait, 500*time.Millisecond),
		RegistryInterval: time.Second, Logger: logger, Metrics: o.metrics,
		ExecProfiles: o.profiles,
	}, worker.OnTaskStarted(o.started))
	require.NoError(t, err)
	if o.beforeWaiting != nil {
		worker.SetBeforeWaiting(w, o.beforeWaiting)
	}
	if o.rotateWait != 0 {
		worker.SetRotateWait(w, o.rotateWait)
	}
	root := t.TempDir()
	s, err := worker.NewSessions(w, worker.SessionsConfig{Factory: worker.PrimitiveSessions(sandboxtest.BuildAgent(t)), Root: root,
		Sweep: o.sweep, DefaultIdle: o.idle})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Start(ctx))
	require.NoError(t, s.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
		_ = w.Stop(ctx)
	})
	return &sessionHost{w: w, s: s, nc: nc, root: root}
}

func sessionClient(t testing.TB, b *brokertest.Broker) *scheduler.Client {
	t.Helper()
	nc, _ := b.Dial(t, "client")
	c, err := scheduler.New(nc, scheduler.Config{})
	require.NoError(t, err)
	return c
}

func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
