package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// PublishReport says what a publication did.
type PublishReport struct {
	Batch   string
	Attempt int
	Total   int // tasks in the attempt
	// Stored counts tasks the stream stored now; Duplicates those it already
	// had (same Nats-Msg-Id within the duplicate window); Skipped those
	// found already in TASKS before publishing (a resumed publication).
	Stored, Duplicates, Skipped int
	// AlreadyComplete: the manifest said every task of this batch was
	// already published, so nothing was sent.
	AlreadyComplete bool
}

// Publish queues a batch as attempt 1, exactly once:
//
//  1. the manifest entry of attempt 1 is written first (Complete false), so
//     results can be awaited and a crash mid-publish is visible;
//  2. every task is published with Nats-Msg-Id = messages.MsgID(batch, id, 1),
//     asynchronously with at most Config.MaxInflight unacknowledged, and
//     re-published on ack timeout (the stream drops the duplicate);
//  3. the manifest is marked Complete.
//
// Publishing the same batch again is safe: a complete batch is not sent
// again; an incomplete one (a crashed publisher) is resumed, skipping tasks
// already in TASKS, so nothing is queued twice even past the stream's
// duplicate window. The same batch id with a different task set is refused
// with ErrBatchConflict.
func (c *Client) Publish(ctx context.Context, b *Batch) (*PublishReport, error) {
	rep := &PublishReport{Batch: b.ID, Attempt: 1, Total: len(b.Tasks)}
	resume := false
	_, err := c.updateManifest(ctx, b.ID, func(m *messages.BatchManifest) error {
		a, ok := m.Attempt(1)
		if ok {
			if a.Digest != b.Digest || a.Total != len(b.Tasks) {
				return fmt.Errorf("%w: batch %q has %d different tasks; choose another batch id", ErrBatchConflict, b.ID, a.Total)
			}
			rep.AlreadyComplete, resume = a.Complete, true
			return nil
		}
		m.SetAttempt(1, messages.AttemptManifest{Total: len(b.Tasks), PublishedAt: time.Now().UTC(), Digest: b.Digest})
		return nil
	})
	if err != nil || rep.AlreadyComplete {
		if rep.AlreadyComplete {
			rep.Skipped = rep.Total
		}
		return rep, err
	}
	skip := map[string]bool{}
	if resume {
		stored, err := c.scanTasks(ctx, taskScan{Batch: b.ID, Attempt: 1, HeadersOnly: true})
		if err != nil {
			return rep, err
		}
		for _, st := range stored {
			skip[st.ID] = true
		}
		c.log.Info().Str("batch", b.ID).Int("already_stored", len(skip)).Msg("resuming an incomplete publication")
	}
	var msgs []*nats.Msg
	for i := range b.Tasks {
		if skip[b.Tasks[i].ID] {
			rep.Skipped++
			continue
		}
		msgs = append(msgs, taskMsg(&b.Tasks[i], b.payloads[i]))
	}
	stored, dups, err := c.publishAll(ctx, msgs)
	rep.Stored, rep.Duplicates = stored, dups
	if err != nil {
		return rep, err
	}
	_, err = c.updateManifest(ctx, b.ID, func(m *messages.BatchManifest) error {
		a, _ := m.Attempt(1)
		a.Complete = true
		m.SetAttempt(1, a)
		return nil
	})
	return rep, err
}

// taskMsg builds the message of one task attempt with its protocol headers.
func taskMsg(t *messages.Task, payload []byte) *nats.Msg {
	attempt := t.EffectiveAttempt()
	h := nats.Header{}
	h.Set(messages.HeaderMsgID, messages.MsgID(t.Batch, t.ID, attempt))
	h.Set(messages.HeaderTaskID, t.ID)
	h.Set(messages.HeaderBatch, t.Batch)
	h.Set(messages.HeaderAttempt, strconv.Itoa(attempt))
	return &nats.Msg{Subject: messages.TaskSubject(t.EffectivePool(), t.EffectiveProfile(), t.Batch), Header: h, Data: payload}
}

// inflight is one publication awaiting its PubAck.
type inflight struct {
	msg   *nats.Msg
	fut   jetstream.PubAckFuture
	tries int
}

// publishAll publishes msgs with bounded in-flight acks and returns how
// many the stream stored anew and how many it reported as duplicates.
func (c *Client) publishAll(ctx context.Context, msgs []*nats.Msg) (stored, dups int, err error) {
	window := make([]*inflight, 0, c.cfg.MaxInflight)
	settle := func(p *inflight) error {
		for {
			select {
			case ack := <-p.fut.Ok():
				if ack.Stream != messages.StreamTasks {
					return fmt.Errorf("scheduler: task %s stored in stream %q, want %s: another stream captures %s", p.msg.Header.Get(messages.HeaderMsgID), ack.Stream, messages.StreamTasks, p.msg.Subject)
				}
				if ack.Duplicate {
					dups++
				} else {
					stored++
				}
				return nil
			case perr := <-p.fut.Err():
				if !retryable(perr) || p.tries >= c.cfg.PublishRetries {
					return fmt.Errorf("scheduler: publish task %s: %w", p.msg.Header.Get(messages.HeaderMsgID), broker.ExplainPublish(messages.StreamTasks, perr))
				}
				p.tries++
				c.log.Warn().Err(perr).Str("msg_id", p.msg.Header.Get(messages.HeaderMsgID)).Int("try", p.tries).Msg("re-publishing task")
				fut, perr := c.js.PublishMsgAsync(cloneMsg(p.msg))
				if perr != nil {
					return fmt.Errorf("scheduler: publish task %s: %w", p.msg.Header.Get(messages.HeaderMsgID), perr)
				}
				p.fut = fut
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	for _, m := range msgs {
		if len(window) == c.cfg.MaxInflight {
			if err := settle(window[0]); err != nil {
				return stored, dups, err
			}
			window = window[1:]
		}
		fut, err := c.js.PublishMsgAsync(cloneMsg(m))
		if err != nil {
			return stored, dups, fmt.Errorf("scheduler: publish task %s: %w", m.Header.Get(messages.HeaderMsgID), err)
		}
		window = append(window, &inflight{msg: m, fut: fut})
	}
	for _, p := range window {
		if err := settle(p); err != nil {
			return stored, dups, err
		}
	}
	return stored, dups, nil
}

// cloneMsg gives each publication its own message: the async publisher sets
// the reply subject on the message it is given.
func cloneMsg(m *nats.Msg) *nats.Msg {
	return &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}
}

func retryable(err error) bool {
	return errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout)
}
