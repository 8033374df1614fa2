package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/messages"
)

// Client publishes batches and reads their results. It is safe for
// concurrent use. The streams and buckets must exist (broker.Setup).
type Client struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config
	log zerolog.Logger

	// handles are the streams and buckets looked up lately (each lookup is
	// a round trip that returns the resource's configuration).
	handlesMu sync.Mutex
	handles   map[string]handle

	// afterRoomCheck, when set (by tests), runs between a publication's
	// room check and its first task: another publisher filling the stream.
	afterRoomCheck func()
	// skewResults, when set (by tests), changes the config of the n-th
	// results consumer a collection makes (from 0): one that delivers
	// nothing, to show the collection makes another.
	skewResults func(n int, cfg *jetstream.OrderedConsumerConfig)
	// resultStall, when set (by tests), replaces the const of that name.
	resultStall time.Duration
}

// handle is a stream or bucket looked up at a time.
type handle struct {
	v  any
	at time.Time
}

// handleTTL is how long a looked-up stream or bucket is reused: a
// publication's steps (size check, manifest create, update) share one
// lookup, and a long-lived client sees a changed configuration (a raised
// max_msg_size) within this.
const handleTTL = 30 * time.Second

// New returns a Client on nc. The client owns no connection: closing nc is
// the caller's job.
func New(nc *nats.Conn, cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	jsOpts := []jetstream.JetStreamOpt{
		jetstream.WithPublishAsyncMaxPending(cfg.MaxInflight),
		jetstream.WithPublishAsyncTimeout(cfg.AckTimeout),
	}
	var js jetstream.JetStream
	var err error
	if cfg.APIPrefix != "" {
		js, err = jetstream.NewWithAPIPrefix(nc, cfg.APIPrefix, jsOpts...)
	} else {
		js, err = jetstream.New(nc, jsOpts...)
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler: jetstream: %w", err)
	}
	return &Client{nc: nc, js: js, cfg: cfg, log: cfg.Logger.With().Str("component", "scheduler").Logger()}, nil
}

func (c *Client) bucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	return lookup(ctx, c, "bucket "+name, func() (jetstream.KeyValue, error) { return c.js.KeyValue(ctx, name) })
}

func (c *Client) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	return lookup(ctx, c, "stream "+name, func() (jetstream.Stream, error) { return c.js.Stream(ctx, name) })
}

// lookup returns the handle of what (a stream or bucket) looked up within
// handleTTL, else looks it up with open (retried while the broker is
// unavailable) and keeps it.
func lookup[T any](ctx context.Context, c *Client, what string, open func() (T, error)) (T, error) {
	c.handlesMu.Lock()
	h, ok := c.handles[what]
	c.handlesMu.Unlock()
	if ok && time.Since(h.at) < handleTTL {
		return h.v.(T), nil
	}
	v, err := retry(ctx, c, "open "+what, open)
	if err != nil {
		return v, fmt.Errorf("scheduler: open %s (has the broker been set up?): %w", what, err)
	}
	c.handlesMu.Lock()
	if c.handles == nil {
		c.handles = map[string]handle{}
	}
	c.handles[what] = handle{v: v, at: time.Now()}
	c.handlesMu.Unlock()
	return v, nil
}

// checkBatchID refuses a batch id that cannot be a subject token.
func checkBatchID(batch string) error {
	t := messages.Task{V: messages.Version, ID: "x", Batch: batch, Kind: messages.KindExec, Argv: []string{"x"}}
	return t.Validate()
}
