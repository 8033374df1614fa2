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
// reservation therefore first takes a free token, else preempts the pulls
// that are waiting (their fetch ends at once; the token comes back) and
// waits up to slotReclaimWait for one. A preempted pull that got a task
// runs it: then the slot is the task's and the create is refused.

// slotReclaimWait bounds how long a create waits for a preempted pull to
// hand its slot back.
const slotReclaimWait = 500 * time.Millisecond

// fetchSet is the cancel functions of the pulls waiting for a task.
type fetchSet struct {
	mu   sync.Mutex
	next int
	m    map[int]context.CancelFunc
}

// preemptible registers cancel as a waiting pull's; the returned func
// unregisters and cancels it.
func (f *fetchSet) preemptible(cancel context.CancelFunc) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[int]context.CancelFunc{}
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

func (f *fetchSet) preemptAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.m {
		c()
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
	w.fetches.preemptAll()
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

// releaseSlot gives a session's slot back to the pulls.
func (w *Worker) releaseSlot() {
	w.markSessions(-1)
	w.slots <- struct{}{}
}

func (w *Worker) markSessions(d int64) {
	w.sessions.Add(d)
	w.nudgeRegistry()
}
