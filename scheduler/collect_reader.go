package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// resultStall is how long a collection waits for its next result before
// it asks the stream whether a result it has not had is stored: if one
// is, the ordered consumer has stalled (it delivers nothing and reports
// no error), and it is made again from the last result read. Nothing is
// lost or counted twice: the new one starts after that result's stream
// sequence. A collection that is only waiting for results not stored yet
// goes on waiting.
const resultStall = 5 * time.Second

// resultStuck is how long past its wait a consumer's Next may take before
// it counts as stuck.
const resultStuck = 10 * time.Second

// resultReader reads a batch attempt's results from the results stream in
// stored order, through an ordered consumer it makes again when it stalls.
type resultReader struct {
	c              *Client
	stream, filter string

	it      jetstream.MessagesContext
	lastSeq uint64 // stream sequence of the last result read
	opened  int    // consumers made so far
}

// next is the next stored result; it waits for one (until ctx ends).
func (r *resultReader) next(ctx context.Context) (jetstream.Msg, error) {
	for {
		if r.it == nil {
			if err := r.open(ctx); err != nil {
				return nil, err
			}
		}
		stall := r.c.resultStall
		if stall == 0 {
			stall = resultStall
		}
		wait, cancel := context.WithTimeout(ctx, stall)
		// A Next that outlives its deadline is stuck inside the consumer
		// (its reset retries without end when the server refuses a new
		// consumer): stopped, it returns, and the consumer is made again.
		it := r.it
		stuck := time.AfterFunc(stall+resultStuck, it.Stop)
		msg, err := it.Next(jetstream.NextContext(wait))
		cancel()
		if !stuck.Stop() {
			r.c.log.Warn().Str("stream", r.stream).Str("filter", r.filter).Msg("the results consumer did not return within its wait: making it again")
			r.it = nil
			continue
		}
		if err == nil {
			if md, merr := msg.Metadata(); merr == nil {
				r.lastSeq = md.Sequence.Stream
			}
			return msg, nil
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		stored, err := r.c.lastSeq(ctx, r.stream, r.filter)
		if err != nil {
			return nil, err
		}
		if stored > r.lastSeq {
			r.c.log.Warn().Str("stream", r.stream).Str("filter", r.filter).Uint64("read", r.lastSeq).Uint64("stored", stored).
				Dur("idle", resultStall).Msg("the results consumer delivers nothing though results are stored: making it again")
			r.stop()
		}
	}
}

// open makes the ordered consumer, from the first result stored or after
// the last one read.
func (r *resultReader) open(ctx context.Context) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{r.filter}}
	if r.lastSeq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.lastSeq+1
	}
	if r.c.skewResults != nil {
		r.c.skewResults(r.opened, &cfg)
	}
	r.opened++
	// Retried like every request: a broker restarting just then (its
	// JetStream still recovering) answers the create late or not at all.
	cons, err := retry(ctx, r.c, "watch results", func() (jetstream.Consumer, error) {
		return r.c.js.OrderedConsumer(ctx, r.stream, cfg)
	})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	r.it = it
	return nil
}

func (r *resultReader) stop() {
	if r.it != nil {
		r.it.Stop()
		r.it = nil
	}
}
