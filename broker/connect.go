package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
		return nil, fmt.Errorf("connect to NATS at %s: %w (start one with `warren broker` or `warren up`, or pass --nats)", url, err)
	}
	return nc, nil
}

// CheckJetStream reports a server without JetStream as such, saying how
// to fix it, instead of the "no responders available" every JetStream
// request would otherwise fail with.
func CheckJetStream(ctx context.Context, js jetstream.JetStream, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := js.AccountInfo(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("JetStream is not enabled on %s: start nats-server with -js", nc.ConnectedUrlRedacted())
	case errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("JetStream is not enabled for this account on %s: enable it for the account in the server's configuration", nc.ConnectedUrlRedacted())
	default:
		return fmt.Errorf("JetStream on %s: %w", nc.ConnectedUrlRedacted(), err)
	}
}

// ErrNoBroker is returned when no broker could be found or started.
var ErrNoBroker = errors.New("broker: no NATS reachable")
