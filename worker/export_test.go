package worker

import "time"

// SetRotateWait sets how long each parked pull waits when there are more
// profiles than slots; before Start.
func SetRotateWait(w *Worker, d time.Duration) { w.rotateWait = d }
