package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// Worker pulls tasks for its free sandbox slots and runs them.
type Worker struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream
	log zerolog.Logger

	slots chan struct{} // a token per free slot
	// finishing holds a token per task storing its result after its
	// sandbox is done, so its slot is free meanwhile (handle.go): as many
	// as there are slots, so a broker slow to store holds the next runs.
	finishing chan struct{}
	// fetches are the pulls waiting for a task (holding a slot), which a
	// session's reservation may preempt; sessions counts slots held by
	// sessions (session_slots.go).
	fetches  fetchSet
	sessions atomic.Int64

	// pullCtx stops fetching (drain); workCtx cancels running tasks.
	pullCtx    context.Context
	stopPull   context.CancelFunc
	workCtx    context.Context
	cancelWork context.CancelCauseFunc

	pullers sync.WaitGroup // pull loops
	tasks   sync.WaitGroup // running tasks
	bg      sync.WaitGroup // registry, cancel watcher, advisories

	spaces  spaces // the namespaces served: the fleet's and each tenant's (spaces.go)
	claims  *claims
	cancels *cancelSet
	metrics *metrics
	nudge   chan struct{} // a slot was taken or freed: refresh the registry soon
	// startedAt is when Start finished (the registry's started_at);
	// draining is set when Stop begins.
	startedAt time.Time
	draining  atomic.Bool
	running   atomic.Int64
	// busyProfiles counts the contested profiles whose last pull found a
	// task; at zero, idle profiles park their pulls (see pullLoop).
	busyProfiles atomic.Int64
	// rotateWait is how long each parked pull waits when there are more
	// profiles than slots (rotateParkWait; tests lengthen it).
	rotateWait time.Duration
	peak       atomic.Int64
	// beforeStore, when set (tests only, before Start), runs before a
	// result is stored.
	beforeStore func(*messages.Result)
	// beforeWaiting, when set (tests only, before Start), runs in a pull
	// loop holding a slot before its waiting fetch registers as
	// preemptible.
	beforeWaiting func()
	// taskStarted, when set (OnTaskStarted), hears each task start.
	taskStarted chan<- string
	done        atomic.Int64

	startOnce, stopOnce sync.Once
	started             atomic.Bool
	stopped             chan struct{}
	stopErr             error
}

// New checks the configuration; nothing runs until Start.
func New(nc *nats.Conn, cfg Config, opts ...Option) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := admitDisk(cfg, cfg.Logger); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:       cfg,
		nc:        nc,
		js:        js,
		log:       cfg.Logger.With().Str("component", "worker").Str("host", cfg.HostID).Logger(),
		slots:     make(chan struct{}, cfg.Capacity),
		finishing: make(chan struct{}, cfg.Capacity),
		stopped:   make(chan struct{}),
		nudge:     make(chan struct{}, 1),

		rotateWait: rotateParkWait,
	}
	for _, o := range opts {
		o(w)
	}
	for range cfg.Capacity {
		w.slots <- struct{}{}
	}
	if w.metrics, err = newMetrics(cfg.Metrics, w); err != nil {
		return nil, err
	}
	return w, nil
}

// Start sets up the consumers, then pulls and runs tasks in the background
// until Stop. ctx bounds setup only.
func (w *Worker) Start(ctx context.Context) error {
	err := errors.New("worker: already started")
	w.startOnce.Do(func() { err = w.start(ctx) })
	return err
}

func (w *Worker) start(ctx context.Context) error {
	if err := broker.Setup(ctx, w.js, broker.StreamConfig{}); err != nil {
		return err
	}
	var err error
	if w.claims, err = w.openClaims(ctx); err != nil {
		return err
	}
	w.pullCtx, w.stopPull = context.WithCancel(context.Background())
	w.workCtx, w.cancelWork = context.WithCancelCause(context.Background())
	w.cancels = newCancelSet()
	w.spaces.m = map[string]*space{}
	fleet, consumers, err := w.prepareSpace(ctx, messages.Namespace{}, nil)
	if err != nil {
		w.stopPull()
		w.cancelWork(errShutdown)
		return err
	}
	w.startedAt = time.Now().UTC()
	w.register()
	w.bg.Add(1)
	go func() { defer w.bg.Done(); w.registryLoop() }()
	w.runSpace(fleet, consumers)
	// Each tenant's namespace, then the tenants as they come and go.
	if err := w.watchTenants(ctx); err != nil {
		w.stopPull()
		w.cancelWork(errShutdown)
		return err
	}
	w.started.Store(true)
	w.log.Info().Int("capacity", w.cfg.Capacity).Strs("profiles", w.cfg.profiles()).Str("pool", w.cfg.Pool).Int("tenants", len(w.spaces.m)-1).Msg("worker started")
	return nil
}

// pullLoop takes a free slot, then asks the consumer for exactly one task.
// No task is ever held without a slot to run it, so nothing waits in a
// buffer while its AckWait runs out.
//
// With one profile the pull holding the slot waits up to PullWait for a
// task: nothing else wants the slot. With several (contested), a slot
// parked in an idle profile's long pull would starve the busy profiles
// (most grabs of a freed slot would idle for PullWait), so while the
// worker is busy a pull that holds a slot never waits, and a profile that
// found nothing sleeps without a slot, from idleMin doubling up to
// PullWait, before it asks again: a task of an idle profile starts within
// PullWait. Once every profile's last pull came back empty (an idle host,
// where a one-off `warren exec` lands), no queued task can be starved:
// each profile's pull then waits up to parkWait holding a slot, as many at
// once as there are free slots, in turn when there are more profiles than
// slots, so a task of a parked profile starts without any poll delay. The
// first task found ends the parking; a parked slot comes back within
// parkWait.
//
// Every namespace served (the fleet's, each tenant's) has its own loops
// (spaces.go), so a tenant's idle profile is one of several contested
// loops; while it sleeps it listens on its own task subjects (idleWait),
// so a tenant's first task after a quiet spell does not wait out the sleep
// behind another tenant's queue. A loop whose space reached its quota's
// Running cap on this host takes no slot until one of its tasks ends.
func (w *Worker) pullLoop(ctx context.Context, s *space, c jetstream.Consumer, profile string) {
	log := w.log.With().Str("profile", profile).Str("tenant", s.ns.Tenant).Logger()
	backoff := newBackoff(100*time.Millisecond, 5*time.Second)
	idle := newBackoff(idleMin, w.cfg.PullWait)
	busy := false // the last pull found a task (contested: counted in busyProfiles)
	defer func() {
		if busy {
			w.busyProfiles.Add(-1)
		}
	}()
	for {
		for s.atCap() {
			select {
			case <-s.freed:
			case <-ctx.Done():
				return
			}
		}
		contested := w.spaces.pulls.Load() > 1
		if !w.yieldToReservations() || !w.takeSlot(ctx, c, profile, contested) {
			return
		}
		if w.fetches.pending() != nil {
			// A session's reservation wants the slot: hand it back and
			// wait for the reservation to end (session_slots.go).
			w.slots <- struct{}{}
			continue
		}
		var batch jetstream.MessageBatch
		var err error
		cancelFetch := func() {}
		parked := contested && w.busyProfiles.Load() == 0
		if contested && !parked {
			batch, err = c.FetchNoWait(1)
		} else {
			// Bound by ctx too: Stop ends a waiting pull at once (the
			// client unsubscribes and the server drops a request nobody
			// listens to) instead of waiting out PullWait.
			wait := w.cfg.PullWait
			if parked {
				wait = w.parkWait()
			}
			var fctx context.Context
			var cancel context.CancelFunc
			fctx, cancel = context.WithTimeout(ctx, wait)
			if w.beforeWaiting != nil {
				w.beforeWaiting()
			}
			cancelFetch = w.fetches.preemptible(cancel)
			batch, err = c.Fetch(1, jetstream.FetchContext(fctx))
		}
		if err != nil {
			cancelFetch()
			w.slots <- struct{}{}
			if ctx.Err() != nil {
				return
			}
			log.Warn().Err(err).Msg("pull failed; retrying")
			w.metrics.pullFailed(profile)
			if !sleepCtx(ctx, backoff.next()) {
				return
			}
			continue
		}
		got := false
		for msg := range batch.Messages() {
			got = true
			if ctx.Err() != nil {
				// Draining: hand it straight back to the pool.
				_ = msg.Nak()
				w.slots <- struct{}{}
				continue
			}
			w.tasks.Add(1)
			s.taskStarted()
			go func() {
				defer w.tasks.Done()
				defer s.taskEnded()
				var once sync.Once
				free := func() { once.Do(func() { w.slots <- struct{}{} }) }
				defer free()
				w.handle(s, msg, free)
			}()
		}
		cancelFetch()
		if !got {
			w.slots <- struct{}{}
		}
		switch {
		case contested && got && !busy:
			busy = true
			w.busyProfiles.Add(1)
		case contested && !got && busy:
			busy = false
			w.busyProfiles.Add(-1)
		}
		if got {
			idle.reset()
		} else if contested && !parked && !w.idleWait(ctx, s, c, profile, idle.next()) {
			return
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) &&
			!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			if ctx.Err() != nil {
				return
			}
			log.Warn().Err(err).Msg("pull ended with an error; retrying")
			w.metrics.pullFailed(profile)
			if !sleepCtx(ctx, backoff.next()) {
				return
			}
			continue
		}
		backoff.reset()
	}
}

// idleWait is a contested loop's pause after a pull found nothing: up to
// d, or until a task is published on the space's subjects of profile (its
// doorbell: a core subscription for one message, made before the
// consumer's pending count is read, so a task published just before is
// seen too). false once the loop must end.
func (w *Worker) idleWait(ctx context.Context, s *space, c jetstream.Consumer, profile string, d time.Duration) bool {
	ch := make(chan *nats.Msg, 1)
	sub, err := w.nc.ChanSubscribe(spaceTaskSubjects(s.ns, w.cfg.Pool, profile), ch)
	if err == nil {
		_ = sub.AutoUnsubscribe(1)
		defer func() { _ = sub.Unsubscribe() }()
		if w.hasPending(c) {
			return ctx.Err() == nil
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-ch:
	}
	return true
}

// spaceTaskSubjects are the task subjects of ns's batches in pool and
// profile.
func spaceTaskSubjects(ns messages.Namespace, pool, profile string) string {
	prefix := messages.SubjectTasksPrefix + "." + pool + "." + profile
	if ns.Tenant == "" {
		return prefix + ".*"
	}
	return prefix + "." + ns.Tenant + ".*"
}

// Stop drains: no new pulls, running tasks finish. If ctx ends first, the
// running tasks are cancelled (their results say cancelled or infra_error
// and their messages are redelivered) and ctx's error is returned. Safe to
// call more than once and before Start.
func (w *Worker) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() {
		defer close(w.stopped)
		if !w.started.Load() {
			return
		}
		w.draining.Store(true)
		w.stopPull()
		w.pullers.Wait()
		// The registry loop has ended with the pulls: say we drain, so
		// `warren hosts` and placement see it until the entry is removed.
		w.register()
		finished := make(chan struct{})
		go func() { w.tasks.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-ctx.Done():
			w.log.Warn().Msg("drain deadline reached: cancelling running tasks")
			w.cancelWork(errShutdown)
			<-finished
			w.stopErr = ctx.Err()
		}
		w.cancelWork(errShutdown)
		w.bg.Wait()
		w.deregister()
		w.log.Info().Int64("tasks_done", w.done.Load()).Msg("worker stopped")
	})
	<-w.stopped
	return w.stopErr
}

// Ready reports whether the worker serves tasks: started, not draining, and
// connected to NATS. It is the worker's part of a readiness check (/readyz);
// the probe sandbox and stream compatibility are checked before Start
// returns, so a started worker has passed them.
func (w *Worker) Ready() error {
	switch {
	case !w.started.Load():
		return errors.New("worker not started")
	case w.draining.Load():
		return errors.New("worker draining")
	case !w.nc.IsConnected():
		return fmt.Errorf("not connected to NATS (%s)", w.nc.Status())
	}
	return nil
}

// Stopped is closed when Stop has finished.
func (w *Worker) Stopped() <-chan struct{} { return w.stopped }

// Stats reports counters, for tests and the registry.
type Stats struct {
	Running, Peak, Done int64
	Capacity            int
}

// Stats returns the current counters.
func (w *Worker) Stats() Stats {
	return Stats{Running: w.running.Load(), Peak: w.peak.Load(), Done: w.done.Load(), Capacity: w.cfg.Capacity}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

type backoff struct{ base, max, cur time.Duration }

// idleMin is the first pause of a contested profile that found no task.
const idleMin = 20 * time.Millisecond

// maxParkWait bounds how long a contested profile's pull holds a slot on
// an idle worker (PullWait when shorter): the longest a busy profile can
// wait for a slot parked just before its first task arrived. With more
// profiles than slots the parked pulls take turns, each for
// rotateParkWait, so a task of a profile not parked waits at most a turn
// or two; an idle worker then asks about as often as its slots allow
// (capacity / rotateParkWait requests a second).
const (
	maxParkWait    = time.Second
	rotateParkWait = 200 * time.Millisecond
)

func (w *Worker) parkWait() time.Duration {
	if len(w.cfg.profiles()) > w.cfg.Capacity {
		return min(w.cfg.PullWait, w.rotateWait)
	}
	return min(w.cfg.PullWait, maxParkWait)
}

func newBackoff(base, max time.Duration) *backoff { return &backoff{base: base, max: max} }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.base
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }
