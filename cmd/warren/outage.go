package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/scheduler"
)

// outageReport says on stderr what a client command waits for while the
// broker is away: at once, then every outageEvery while it lasts, and
// when the broker is back.
type outageReport struct {
	w        io.Writer
	url      string // the broker's, as the command dialed it
	retryFor time.Duration

	mu      sync.Mutex
	printed time.Time // the last line of the outage; zero: none going on
}

// outageEvery is how often an outage going on is reported again.
const outageEvery = 10 * time.Second

func newOutageReport(w io.Writer, url string, retryFor time.Duration) *outageReport {
	if url == "" {
		url = "the embedded broker"
	}
	return &outageReport{w: w, url: url, retryFor: retryFor}
}

// note is scheduler.Config.OnOutage.
func (r *outageReport) note(o scheduler.Outage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o.Over {
		if !r.printed.IsZero() {
			fmt.Fprintf(r.w, "warren: broker reachable again at %s; going on\n", r.url)
			r.printed = time.Time{}
		}
		return
	}
	now := time.Now()
	if !r.printed.IsZero() && now.Sub(r.printed) < outageEvery {
		return
	}
	r.printed = now
	left := max(o.Left, 0).Round(time.Second)
	if o.Reachable {
		fmt.Fprintf(r.w, "warren: broker at %s is connected but does not answer in time (it may be restarting, or its disk full; %s: %v), retrying for %s more (--retry-for %s)\n", r.url, o.Op, o.Err, left, r.retryFor)
		return
	}
	fmt.Fprintf(r.w, "warren: broker unreachable at %s, retrying for %s more (--retry-for %s)\n", r.url, left, r.retryFor)
}

// unavailableHint says what to do after a command gave up on a broker
// away for longer than --retry-for.
func (g *globals) unavailableHint(err error) error {
	if !errors.Is(err, scheduler.ErrBrokerUnavailable) {
		return err
	}
	return fmt.Errorf("%w\nthe broker was away for longer than --retry-for %s: check that it runs (`warren up` or `warren broker` on its host) and is reachable; a larger --retry-for waits longer", err, g.RetryFor)
}

// dialRetry is the pause between two tries to reach a broker.
const dialRetry = 250 * time.Millisecond

// dial connects to the broker at url, retrying while it is unreachable
// (restarting, or not started yet) for up to --retry-for, and saying so.
func (g *globals) dial(ctx context.Context, url, name string, opts []nats.Option) (*nats.Conn, error) {
	report := newOutageReport(g.IO.Err, redactURL(url), g.RetryFor)
	start := time.Now()
	for {
		nc, err := broker.Connect(ctx, url, name, opts...)
		if err == nil {
			report.note(scheduler.Outage{Op: "connect", Over: true})
			return nc, nil
		}
		left := g.RetryFor - time.Since(start)
		if !unreachable(err) || left <= 0 {
			return nil, err
		}
		report.note(scheduler.Outage{Op: "connect", Left: left})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(dialRetry):
		}
	}
}

// unreachable reports whether a failed connection found no broker
// answering (refused, closed, timed out), rather than one that refused
// the client (credentials, TLS).
func unreachable(err error) bool {
	var ne net.Error
	return errors.Is(err, nats.ErrNoServers) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, nats.ErrTimeout) || errors.As(err, &ne) && ne.Timeout()
}

// redactURL is url without a password.
func redactURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
