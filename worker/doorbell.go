package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// The doorbell: on an idle worker with more profiles than slots, the
// parked pulls take turns (rotateWait each), so a profile whose turn it
// is not has no pull waiting, and a one-off task on it would wait up to
// a turn with every slot free. While
// such a profile waits for a slot that parked pulls hold, it listens on
// its own task subjects (a core subscription for one message) and looks
// once whether its consumer already has a task pending (one published
// before the subscription reached the server): either preempts one parked
// pull, whose slot comes back at once to the profile waiting longest for
// it (the channel serves waiters in order), which then pulls the task.
// Whether the host is idle and pulls are parked is looked at again every
// doorbellRecheck while the profile waits (it may wait from before the
// parking began), and the pending count every doorbellPendingRecheck
// (the one race left: a task the stream had not yet stored when the
// count was read, and published before the subscription).
//
// The doorbell sees one task at most per wait and only while the worker is
// idle, so it costs the broker one copy of an occasional message and a
// consumer info now and then; a busy worker never arms it.

const (
	doorbellRecheck        = 20 * time.Millisecond
	doorbellPendingRecheck = time.Second
)

// takeSlot waits for a free slot for the next pull of profile (consumer
// c); false once pulling stops.
func (w *Worker) takeSlot(ctx context.Context, c jetstream.Consumer, profile string, contested bool) bool {
	select {
	case <-ctx.Done():
		return false
	case <-w.slots:
		return true
	default:
	}
	var (
		ring    <-chan *nats.Msg
		stop    func()
		recheck <-chan time.Time
		pending <-chan time.Time
	)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	rang := func() {
		ring, pending = nil, nil
		w.metrics.doorbellRang(profile)
		w.fetches.preemptOne()
	}
	// arm subscribes once the host is idle with pulls parked.
	arm := func() {
		if stop != nil || w.busyProfiles.Load() != 0 || w.fetches.waiting() == 0 {
			return
		}
		ring, stop = w.doorbell(profile)
		if w.hasPending(c) {
			rang()
			return
		}
		t := time.NewTicker(doorbellPendingRecheck)
		prev := stop
		stop = func() { t.Stop(); prev() }
		pending = t.C
	}
	if contested && len(w.cfg.profiles()) > w.cfg.Capacity {
		t := time.NewTicker(doorbellRecheck)
		defer t.Stop()
		recheck = t.C
		arm()
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-w.slots:
			return true
		case <-ring:
			rang()
		case <-pending:
			if w.hasPending(c) {
				rang()
			}
		case <-recheck:
			arm()
		}
	}
}

// doorbell subscribes to the next task published on profile's subjects;
// stop unsubscribes. Without a subscription (a connection error, or a
// broker refusing it) the channel never delivers: the turns take over.
func (w *Worker) doorbell(profile string) (<-chan *nats.Msg, func()) {
	ch := make(chan *nats.Msg, 1)
	subject := messages.SubjectTasksPrefix + "." + w.cfg.Pool + "." + profile + ".>"
	sub, err := w.nc.ChanSubscribe(subject, ch)
	if err != nil {
		w.log.Debug().Err(err).Str("profile", profile).Msg("no doorbell: a task on this profile waits for its turn")
		return nil, func() {}
	}
	_ = sub.AutoUnsubscribe(1)
	return ch, func() { _ = sub.Unsubscribe() }
}

// hasPending reports whether consumer c has a task no pull took yet (it
// is asked after the doorbell's subscription, on the same connection).
func (w *Worker) hasPending(c jetstream.Consumer) bool {
	ctx, cancel := context.WithTimeout(w.pullCtx, 2*time.Second)
	defer cancel()
	ci, err := c.Info(ctx)
	return err == nil && ci.NumPending > 0
}
