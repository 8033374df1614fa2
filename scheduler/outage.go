package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Outage tells Config.OnOutage what an operation waits for while the
// broker is away, and for how much longer it will.
type Outage struct {
	// Op is what waits: "publish", "write manifest", "results of b1", ...
	Op string
	// Err is the last failure; nil when the connection is down or Over.
	Err error
	// Reachable: the connection is up, but the broker does not answer in
	// time (restarting, its disk full); else it is unreachable.
	Reachable bool
	// Left is how much longer Op waits before it gives up with
	// ErrBrokerUnavailable (Config.RetryFor from the outage's start).
	Left time.Duration
	// Over: the connection is back; Op goes on.
	Over bool
}

// outage tells Config.OnOutage, if set, of o.
func (c *Client) outage(o Outage) {
	if c.cfg.OnOutage != nil {
		c.cfg.OnOutage(o)
	}
}

// outagePoll is how often an operation waiting on the broker looks at
// its connection.
const outagePoll = 250 * time.Millisecond

// awaitBroker returns a context for an operation that waits on the
// broker for as long as it takes (a collection, an Exec): it ends, with a
// cause matching ErrBrokerUnavailable, once the connection has been down
// for Config.RetryFor, and Config.OnOutage hears of the outage meanwhile.
// stop ends the watch and waits for it.
func (c *Client) awaitBroker(ctx context.Context, op string) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { c.watchConn(ctx, op, cancel, done) })
	return ctx, func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// watchConn is awaitBroker's watch, until done or ctx ends.
func (c *Client) watchConn(ctx context.Context, op string, cancel context.CancelCauseFunc, done <-chan struct{}) {
	t := time.NewTicker(outagePoll)
	defer t.Stop()
	var since time.Time // when the connection went down; zero while up
	for {
		select {
		case <-done:
			if !since.IsZero() && c.nc.IsConnected() {
				c.outage(Outage{Op: op, Over: true}) // the operation ended on the connection back
			}
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.nc.IsConnected() {
			if !since.IsZero() {
				c.outage(Outage{Op: op, Over: true})
				since = time.Time{}
			}
			continue
		}
		now := time.Now()
		if since.IsZero() {
			since = now
		}
		left := c.cfg.RetryFor - now.Sub(since)
		if left <= 0 {
			cancel(fmt.Errorf("%w: %s: unreachable for %s", ErrBrokerUnavailable, op, c.cfg.RetryFor))
			return
		}
		c.outage(Outage{Op: op, Left: left})
	}
}
