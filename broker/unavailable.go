package broker

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unavailable reports whether err is the broker being away for a while
// rather than a refusal, so that doing the same again later may succeed:
// no answer in time (a store that fails its writes, its disk full,
// answers none), no responders (JetStream restarting, a stream without a
// leader), a connection reconnecting, or JetStream's 503. A full stream
// says 503 too, but stays full: not this. A context.DeadlineExceeded
// counts as a request's own timeout: the caller checks its own context.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrReconnectBufExceeded), errors.Is(err, nats.ErrSlowConsumer),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrTooManyStalledMsgs), errors.Is(err, jetstream.ErrNoHeartbeat),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503 && !IsStoreFull(err) && !IsResultExists(err)
}
