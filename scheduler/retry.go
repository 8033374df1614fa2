package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenhq/warren/broker"
)

// ErrBrokerUnavailable: the broker stayed unavailable (unreachable,
// restarting, a stream without a leader) for longer than Config.RetryFor.
// What was published before is stored; doing the same again resumes.
var ErrBrokerUnavailable = errors.New("scheduler: broker unavailable")

// retryWait is the pause between two tries of an operation that failed
// at once (no responders while a stream elects a leader, a request on a
// connection still reconnecting).
const retryWait = 250 * time.Millisecond

// transient reports whether err is the broker being unavailable for a
// while rather than a refusal (broker.Unavailable) while ctx is live: the
// operation may succeed if tried again.
func transient(ctx context.Context, err error) bool {
	return ctx.Err() == nil && broker.Unavailable(err)
}

// retrier retries one operation through transient errors until
// Config.RetryFor has passed since its first failure.
type retrier struct {
	c       *Client
	what    string
	firstAt time.Time
	tries   int
}

// again reports whether to try again after err (it waits retryWait first
// when wait is set), or returns the error to give up with.
func (r *retrier) again(ctx context.Context, err error, wait bool) error {
	if !transient(ctx, err) {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	now := time.Now()
	if r.firstAt.IsZero() {
		r.firstAt = now
	}
	if now.Sub(r.firstAt) >= r.c.cfg.RetryFor {
		return fmt.Errorf("%w: %s: still failing after %s (%d tries): %w", ErrBrokerUnavailable, r.what, r.c.cfg.RetryFor, r.tries+1, err)
	}
	r.tries++
	if r.c.cfg.OnOutage != nil {
		r.c.outage(Outage{Op: r.what, Err: err, Reachable: r.c.nc.IsConnected(), Left: r.c.cfg.RetryFor - now.Sub(r.firstAt)})
	} else if r.tries == 1 || r.tries%20 == 0 {
		r.c.log.Warn().Err(err).Str("op", r.what).Int("try", r.tries).Msg("broker unavailable; retrying")
	}
	if wait {
		t := time.NewTimer(retryWait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// recovered tells Config.OnOutage that the operation went through after
// failing: the outage it reported is over.
func (r *retrier) recovered() {
	if r.tries > 0 {
		r.c.outage(Outage{Op: r.what, Over: true})
	}
}

// retry runs fn until it succeeds, fails for good, or the broker has been
// unavailable for Config.RetryFor.
func retry[T any](ctx context.Context, c *Client, what string, fn func() (T, error)) (T, error) {
	r := &retrier{c: c, what: what}
	for {
		v, err := fn()
		if err == nil {
			r.recovered()
			return v, nil
		}
		if gerr := r.again(ctx, err, true); gerr != nil {
			return v, gerr
		}
	}
}
