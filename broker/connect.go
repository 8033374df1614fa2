package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/nats-io/nats.go"
)

// Connect dials an external NATS at url with options suited to long-lived
// Warren processes: unlimited reconnects, so a broker restart is survived.
func Connect(ctx context.Context, url, name string, opts ...nats.Option) (*nats.Conn, error) {
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	base := []nats.Option{
		nats.Name(name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
	}
	nc, err := nats.Connect(url, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w (%s)", url, err, connectHint(err))
	}
	return nc, nil
}

// Reachable reports whether something accepts TCP connections at a NATS
// URL: the cheap check clients use to decide between a running local broker
// and starting an embedded one.
func Reachable(ctx context.Context, natsURL string) bool {
	u, err := url.Parse(natsURL)
	if err != nil || u.Host == "" {
		return false
	}
	d := net.Dialer{Timeout: 300 * time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// ErrNoBroker is returned when no broker could be found or started.
var ErrNoBroker = errors.New("broker: no NATS reachable")
