package worker

import (
	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
)

// The doorbell: on an idle worker with more profiles than slots, the
// parked pulls take turns (rotateWait each), so a profile whose turn it
// is not has no pull waiting, and a one-off task on it used to wait up to
// a turn with every slot free (measured: 50–170 ms on a third of `warren
// exec`s against `warren up --capacity 2` serving three profiles). While
// such a profile waits for a slot that parked pulls hold, it listens on
// its own task subjects (a core subscription for one message): a task
// published there preempts one parked pull, whose slot comes back at once
// to the profile waiting longest for it (the channel serves waiters in
// order), which then pulls the task. The doorbell sees one task at most
// and only while the worker is idle, so it costs the broker one copy of
// an occasional message; a task published before the subscription reached
// the server waits for the turn as before.

// takeSlot waits for a free slot for profile's next pull; false once
// pulling stops.
func (w *Worker) takeSlot(profile string, contested bool) bool {
	select {
	case <-w.pullCtx.Done():
		return false
	case <-w.slots:
		return true
	default:
	}
	var ring <-chan *nats.Msg
	if contested && w.busyProfiles.Load() == 0 && w.fetches.waiting() > 0 {
		var stop func()
		ring, stop = w.doorbell(profile)
		defer stop()
	}
	for {
		select {
		case <-w.pullCtx.Done():
			return false
		case <-w.slots:
			return true
		case <-ring:
			ring = nil
			w.metrics.doorbellRang(profile)
			w.fetches.preemptOne()
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
