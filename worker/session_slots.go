package worker

import (
	"context"
	"sync"
	"time"
)

// Sessions hold a slot of the same pool tasks are pulled for (Worker.slots):
// a host with every slot held by sessions pulls no task.
//
// A pull loop waiting for a task holds a slot while it waits (up to
// PullWait), so a create could find no free token on an idle host. A
// reservation therefore first takes a free token, else marks itself
// pending and preempts the pulls that are waiting (their fetch ends at
// once; the token comes back), and waits up to slotReclaimWait for one.
// While a reservation is pending, no pull loop keeps a token: one that
// takes a token gives it back, one that registers its fetch after the
// preemption ends that fetch at once, and none takes a token again until
// the reservation ends (the token then reaches the create whatever the
// order the channel serves its waiters in; pull loops re-enter their
// select on their own tickers, so that order alone let two profiles' pull
// loops hand the token to each other and starve the create). A pull that
// got a task before the reservation runs it: then the slot is the task's
// and the create is refused unless another comes back in time.

// slotReclaimWait bounds how long a create waits for a preempted pull to
// hand its slot back.
const slotReclaimWait = 500 * time.Millisecond

// fetchSet is the cancel functions of the pulls waiting for a task, and
// the session reservations pending (see above): one mutex orders a fetch's
// registration against a reservation's preemption.
type fetchSet struct {
	mu   sync.Mutex
	next int
	m    map[int]context.CancelFunc
	// reserving counts the pending reservations; clear is closed when
	// the last one ends (nil while none is pending).
	reserving int
	clear     chan struct{}
}

// preemptible registers cancel as a waiting pull's; the returned func
// unregisters and cancels it. A fetch registered while a reservation is
// pending is cancelled at once: the reservation wants its token.
func (f *fetchSet) preemptible(cancel context.CancelFunc) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[int]context.CancelFunc{}
	}
	if f.reserving > 0 {
		cancel()
	}
	f.next++
	id := f.next
	f.m[id] = cancel
	return func() {
		f.mu.Lock()
		delete(f.m, id)
		f.mu.Unlock()
		cancel()
	}
}

// reserve marks a reservation pending and preempts every waiting pull;
// the returned func ends the reservation.
func (f *fetchSet) reserve() func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reserving == 0 {
		f.clear = make(chan struct{})
	}
	f.reserving++
	for _, c := range f.m {
		c()
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reserving--
		if f.reserving == 0 {
			close(f.clear)
			f.clear = nil
		}
	}
}

// pending is closed when no reservation is pending any more; nil when none
// is pending now.
func (f *fetchSet) pending() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clear
}

// waiting is how many pulls wait for a task.
func (f *fetchSet) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m)
}

// preemptOne ends the longest-waiting pull (its slot comes back), if any.
func (f *fetchSet) preemptOne() {
	f.mu.Lock()
	defer f.mu.Unlock()
	oldest := 0
	for id := range f.m {
		if oldest == 0 || id < oldest {
			oldest = id
		}
	}
	if c, ok := f.m[oldest]; ok {
		c()
		delete(f.m, oldest)
	}
}

// reserveSlot takes a slot for a session; false when none is free (or ctx
// ended). The caller gives it back with releaseSlot.
func (w *Worker) reserveSlot(ctx context.Context) bool {
	select {
	case <-w.slots:
		w.markSessions(1)
		return true
	default:
	}
	defer w.fetches.reserve()()
	t := time.NewTimer(slotReclaimWait)
	defer t.Stop()
	select {
	case <-w.slots:
		w.markSessions(1)
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// yieldToReservations waits while a session reservation is pending; false
// once pulling stops.
func (w *Worker) yieldToReservations() bool {
	ch := w.fetches.pending()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-w.pullCtx.Done():
		return false
	}
}

// releaseSlot gives a session's slot back to the pulls.
func (w *Worker) releaseSlot() {
	w.markSessions(-1)
	w.slots <- struct{}{}
}

func (w *Worker) markSessions(d int64) {
	w.sessions.Add(d)
	w.nudgeRegistry()
}
