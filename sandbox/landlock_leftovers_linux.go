package sandbox

import (
	"os"

	"github.com/warrenhq/warren/sandbox/internal/ident"
)

// killLeftovers kills, once and without waiting, what of b's Landlock-mode
// run may have left its session (setsid): every process of its cgroup,
// else (a root worker) every live process of its uid, else the worker's
// sandboxed orphans (orphan_sweep_linux.go). The teardown then sweeps
// until nothing is left; this is for the run's end, so that nothing of it
// holds the task's end back (a tracer of one of its threads) or its
// output pipes open.
func (r *Runner) killLeftovers(b *box) {
	switch {
	case b.cg != nil:
		_, _ = b.cg.KillAll()
	case r.pool != nil:
		killUID(b.uid)
	default:
		_, _, _ = sweepOrphansOnce(true)
	}
}

// killUID SIGKILLs every process of uid at once (ident.KillAll); never
// the worker's own.
func killUID(uid uint32) {
	if uid == uint32(os.Getuid()) {
		return
	}
	_ = ident.KillAll(uid)
}
