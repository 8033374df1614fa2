package sandbox

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"github.com/warrenhq/warren/sandbox/internal/ident"
)

// ErrClosed means Start was called on a Runner after Close.
var ErrClosed = errors.New("sandbox: runner closed")

// lifecycle is the Start/Close state of a Runner.
type lifecycle struct {
	mu              sync.Mutex
	started, closed bool
}

// Start sweeps the scratch directories and cgroups that dead workers left
// behind and starts the warm pool (Config.Prestart) in the background.
// It is idempotent; after Close it returns ErrClosed. The warm pool's
// goroutines are the Runner's: Close stops them and waits for them, ctx
// only bounds Start itself.
func (r *Runner) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.life.mu.Lock()
	defer r.life.mu.Unlock()
	if r.life.closed {
		return ErrClosed
	}
	if r.life.started {
		return nil
	}
	r.life.started = true
	r.setupHost()
	r.sweepStale()
	r.warm.start(r.cfg.Prestart, r.cfg.Isolation, r.cfg.Defaults)
	return nil
}

// Close kills and reaps the Runner's warm sandboxes and releases their
// uids, scratch directories and cgroups, and waits for every goroutine of
// the pool; runs in progress are not affected, and later runs start cold.
// It is idempotent.
func (r *Runner) Close() error {
	r.life.mu.Lock()
	r.life.closed = true
	r.life.mu.Unlock()
	r.warm.close()
	return nil
}

// setupHost detects, once, what the isolated modes share on this host:
// the cgroup interface and, for a root worker, the sandbox uid pool.
func (r *Runner) setupHost() {
	r.hostOnce.Do(func() {
		r.cgroups = cgroup.Detect()
		if os.Geteuid() == 0 {
			r.pool = ident.SharedPool(r.cfg.UIDBase, r.cfg.UIDCount)
		}
	})
}
