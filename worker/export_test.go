package worker

import (
	"time"

	"github.com/warrenhq/warren/messages"
)

// SetRotateWait sets how long each parked pull waits when there are more
// profiles than slots; before Start.
func SetRotateWait(w *Worker, d time.Duration) { w.rotateWait = d }

// SetBeforeStore makes the worker call fn before it stores each result;
// before Start.
func SetBeforeStore(w *Worker, fn func(*messages.Result)) { w.beforeStore = fn }

// SetBeforeWaiting makes each pull loop call fn while it holds a slot,
// before its waiting fetch registers as preemptible; before Start.
func SetBeforeWaiting(w *Worker, fn func()) { w.beforeWaiting = fn }

// ReservationPending reports whether a session's slot reservation waits.
func ReservationPending(w *Worker) bool { return w.fetches.pending() != nil }
