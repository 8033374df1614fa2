package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// taskScan selects task messages of one batch in WARREN_TASKS.
type taskScan struct {
	Batch   string
	Attempt int // 0: every attempt
	// Range of stream sequences (inclusive; 0 = unbounded) and of storage
	// times (Since inclusive, Until exclusive; zero = unbounded).
	FromSeq, ToSeq uint64
	Since, Until   time.Time
	HeadersOnly    bool
}

// storedTask is one task message found in WARREN_TASKS.
type storedTask struct {
	ID      string
	Attempt int
	Seq     uint64
	Time    time.Time
	Data    []byte // empty for a headers-only scan
}

// scanTasks reads the batch's task messages that exist now, in stream order,
// through an ordered consumer; it stops at the last matching message, so it
// never waits for more.
func (c *Client) scanTasks(ctx context.Context, sc taskScan) ([]storedTask, error) {
	filter := messages.BatchTaskFilter(sc.Batch)
	last, err := c.lastSeq(ctx, messages.NamespaceOf(sc.Batch).Tasks(), filter)
	if err != nil || last == 0 || (sc.FromSeq > 0 && sc.FromSeq > last) {
		return nil, err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, HeadersOnly: sc.HeadersOnly}
	switch {
	case sc.FromSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, sc.FromSeq
	case !sc.Since.IsZero():
		since := sc.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	cons, err := retry(ctx, c, "read tasks", func() (jetstream.Consumer, error) {
		return c.js.OrderedConsumer(ctx, messages.NamespaceOf(sc.Batch).Tasks(), cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("scheduler: read tasks of %s: %w", sc.Batch, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("scheduler: read tasks of %s: %w", sc.Batch, err)
	}
	defer it.Stop()
	var out []storedTask
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("scheduler: read tasks of %s: %w", sc.Batch, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return nil, err
		}
		seq := md.Sequence.Stream
		inRange := (sc.ToSeq == 0 || seq <= sc.ToSeq) && (sc.Until.IsZero() || md.Timestamp.Before(sc.Until))
		attempt, _ := strconv.Atoi(msg.Headers().Get(messages.HeaderAttempt))
		if inRange && (sc.Attempt == 0 || attempt == sc.Attempt) {
			out = append(out, storedTask{ID: msg.Headers().Get(messages.HeaderTaskID), Attempt: attempt, Seq: seq, Time: md.Timestamp, Data: msg.Data()})
		}
		// Stop at the end of what existed when the scan started, or once
		// past the requested range.
		if seq >= last || md.NumPending == 0 || !inRange {
			return out, nil
		}
	}
}

// lastSeq is the stream sequence of the last message matching filter, 0
// when there is none.
func (c *Client) lastSeq(ctx context.Context, stream, filter string) (uint64, error) {
	m, err := c.lastMsg(ctx, stream, filter)
	if err != nil || m == nil {
		return 0, err
	}
	return m.Sequence, nil
}

// lastMsg is the last message matching filter, nil when there is none.
func (c *Client) lastMsg(ctx context.Context, stream, filter string) (*jetstream.RawStreamMsg, error) {
	s, err := c.stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	m, err := retry(ctx, c, "read "+stream, func() (*jetstream.RawStreamMsg, error) { return s.GetLastMsgForSubject(ctx, filter) })
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scheduler: last message of %s in %s: %w", filter, stream, err)
	}
	return m, nil
}
