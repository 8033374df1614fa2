package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/messages"
)

// Config tunes a Client. Zero fields take their defaults.
type Config struct {
	// MaxInflight bounds tasks published but not yet acknowledged by the
	// stream, so a large batch neither floods the broker nor the client's
	// memory. Defaults to 256.
	MaxInflight int
	// AckTimeout is how long one publication waits for its PubAck before it
	// is published again (with the same Nats-Msg-Id, so the stream stores it
	// once). Defaults to 5s.
	AckTimeout time.Duration
	// RetryFor is how long a publication, a manifest update or a read keeps
	// retrying while the broker is unavailable (disconnected and
	// reconnecting, restarting, a stream without a leader, no ack in time),
	// and how long Collect and Exec wait on a connection that is down,
	// before they give up with ErrBrokerUnavailable. A task is always
	// re-published with the same Nats-Msg-Id, so it is stored once.
	// Defaults to 2m.
	RetryFor time.Duration
	// EventGrace is how long Exec keeps reading live events after the
	// result arrived, so output still in flight is printed before it
	// returns; it is not waited when the delivery's events up to the
	// result's Events (or its final exit) are already here. Defaults to 2s.
	EventGrace time.Duration
	// ResultWatch is how long Exec waits for the task's final event (sent
	// once its result is stored; Exec then reads the result with one
	// direct get) before it also watches WARREN_RESULTS for the result
	// (an ordered consumer: a result whose final event was lost still
	// arrives). A task that ends sooner costs the broker no consumer.
	// Defaults to 2s.
	ResultWatch time.Duration
	// InboxPrefixes are the inbox prefixes a replayed task's reply may use
	// (see BatchOptions.InboxPrefixes); a stored task whose reply breaks the
	// rule is not replayed. Defaults to messages.DefaultInboxPrefixes.
	InboxPrefixes []string
	// PoolKeys finds the key each pool's secrets are sealed to. Defaults to
	// nil: a batch with secrets is refused.
	PoolKeys PoolKeys
	// Logger receives diagnostics. Defaults to a disabled logger.
	Logger zerolog.Logger
	// APIPrefix is the JetStream API prefix of the connection's account: a
	// tenant on an authenticated broker reaches the fleet's streams under
	// broker.TenantAPIPrefix. Defaults to "" ($JS.API).
	APIPrefix string
	// Tenant qualifies the ids of batches Exec makes up as "<tenant>.<name>"
	// (see messages.ValidBatchID). Defaults to "" (no tenant).
	Tenant string
	// OnOutage, when set, hears what waits while the broker is away: each
	// retry of a request, and while Collect or Exec waits on a connection
	// that is down (every few hundred milliseconds, and once when it is
	// back). It must not block. Without it retries are logged. Defaults to
	// nil.
	OnOutage func(Outage)
}

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.MaxInflight = cmp.Or(c.MaxInflight, 256)
	c.AckTimeout = cmp.Or(c.AckTimeout, 5*time.Second)
	c.RetryFor = cmp.Or(c.RetryFor, 2*time.Minute)
	c.EventGrace = cmp.Or(c.EventGrace, 2*time.Second)
	c.ResultWatch = cmp.Or(c.ResultWatch, 2*time.Second)
	if len(c.InboxPrefixes) == 0 {
		c.InboxPrefixes = messages.DefaultInboxPrefixes
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.MaxInflight < 1 {
		errs = append(errs, fmt.Errorf("scheduler config: MaxInflight must be at least 1, got %d", c.MaxInflight))
	}
	if c.AckTimeout <= 0 {
		errs = append(errs, fmt.Errorf("scheduler config: AckTimeout must be positive, got %s", c.AckTimeout))
	}
	if c.RetryFor < 0 {
		errs = append(errs, fmt.Errorf("scheduler config: RetryFor must not be negative, got %s", c.RetryFor))
	}
	if c.EventGrace < 0 {
		errs = append(errs, fmt.Errorf("scheduler config: EventGrace must not be negative, got %s", c.EventGrace))
	}
	if c.ResultWatch < 0 {
		errs = append(errs, fmt.Errorf("scheduler config: ResultWatch must not be negative, got %s", c.ResultWatch))
	}
	for _, p := range c.InboxPrefixes {
		if err := messages.CheckInboxPrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("scheduler config: InboxPrefixes: %w", err))
		}
	}
	return errors.Join(errs...)
}
