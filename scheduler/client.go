package scheduler

import (
	"context"
	"fmt"

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
}

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
	kv, err := retry(ctx, c, "open bucket "+name, func() (jetstream.KeyValue, error) { return c.js.KeyValue(ctx, name) })
	if err != nil {
		return nil, fmt.Errorf("scheduler: open bucket %s (has the broker been set up?): %w", name, err)
	}
	return kv, nil
}

func (c *Client) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := retry(ctx, c, "open stream "+name, func() (jetstream.Stream, error) { return c.js.Stream(ctx, name) })
	if err != nil {
		return nil, fmt.Errorf("scheduler: open stream %s (has the broker been set up?): %w", name, err)
	}
	return s, nil
}

// checkBatchID refuses a batch id that cannot be a subject token.
func checkBatchID(batch string) error {
	t := messages.Task{V: messages.Version, ID: "x", Batch: batch, Kind: messages.KindExec, Argv: []string{"x"}}
	return t.Validate()
}
