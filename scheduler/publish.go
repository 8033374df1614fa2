package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	return c.publish(ctx, b, nil)
}

// publish is Publish with step 1 maybe under way already: early, when not
// nil, delivers the outcome of writeAttemptOne started by the caller
// (Exec writes the manifest while its gate runs). A publication that then
// fails before it sends a task removes the manifest it created.
func (c *Client) publish(ctx context.Context, b *Batch, early <-chan attemptOne) (*PublishReport, error) {
	rep := &PublishReport{Batch: b.ID, Attempt: 1, Total: len(b.Tasks)}
	unsent := func(err error) (*PublishReport, error) {
		if early != nil {
			c.dropAttemptOne(ctx, b, <-early)
		}
		return rep, err
	}
	// Sealing fills the payloads of tasks with secrets.
	if err := c.seal(ctx, b); err != nil {
		return unsent(err)
	}
	msgs := make([]*nats.Msg, len(b.Tasks))
	for i := range b.Tasks {
		msgs[i] = taskMsg(&b.Tasks[i], b.payloads[i])
	}
	// All or nothing: every task must fit the broker before the first write.
	limits, err := c.checkSizes(ctx, b.ID, msgs, b.lines, b.show)
	if err != nil {
		return unsent(err)
	}
	var a1 attemptOne
	if early != nil {
		a1 = <-early
	} else {
		a1 = c.writeAttemptOne(ctx, b)
	}
	created, rev, resume, err := a1.m, a1.rev, a1.resume, a1.err
	rep.AlreadyComplete = a1.complete
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
	send := msgs[:0:0]
	for i := range b.Tasks {
		if skip[b.Tasks[i].ID] {
			rep.Skipped++
			continue
		}
		send = append(send, msgs[i])
	}
	// All or nothing: room in the task stream for every task left to send.
	if err := checkRoom(b.ID, limits, send); err != nil {
		c.dropAttemptOne(ctx, b, a1)
		return rep, err
	}
	if err := c.putInputs(ctx, b.ID, b.inputs); err != nil {
		c.dropAttemptOne(ctx, b, a1)
		return rep, err
	}
	if c.afterRoomCheck != nil {
		c.afterRoomCheck()
	}
	stored, dups, err := c.publishAll(ctx, send)
	rep.Stored, rep.Duplicates = stored, dups
	if err != nil {
		return rep, c.publishFailed(ctx, b, a1, rep, len(send), err)
	}
	// From the manifest just written: no read unless it changed since.
	_, _, err = c.updateManifestFrom(ctx, b.ID, created, rev, func(m *messages.BatchManifest) error {
		a, _ := m.Attempt(1)
		a.Complete = true
		m.SetAttempt(1, a)
		return nil
	})
	return rep, err
}

// publishFailed is err of a publication that stopped: a batch of one
// refused whole (too large, or the stream full) leaves no manifest, as
// checkSizes and checkRoom would have; a full stream that stopped a
// larger batch part way says so, and that submitting it again resumes it.
func (c *Client) publishFailed(ctx context.Context, b *Batch, a1 attemptOne, rep *PublishReport, sent int, err error) error {
	var full *broker.StoreFullError
	isFull := errors.As(err, &full)
	refusedWhole := sent == 1 && rep.Stored+rep.Duplicates == 0
	switch {
	case refusedWhole && (isFull || errors.Is(err, &messages.Error{Code: messages.CodeTooLarge})):
		c.dropAttemptOne(ctx, b, a1)
	case isFull && full.Room == nil:
		return &broker.StoreFullError{Stream: full.Stream, Err: full.Err,
			Stopped: &broker.Stopped{Batch: b.ID, Stored: rep.Skipped + rep.Stored + rep.Duplicates, Total: rep.Total}}
	}
	return err
}

// attemptOne is the outcome of Publish's step 1 for a batch: its manifest
// as stored (at rev) with attempt 1 in it, and whether attempt 1 was there
// already (resume; complete: every task of it was published).
type attemptOne struct {
	m                *messages.BatchManifest
	rev              uint64
	resume, complete bool
	err              error
}

// writeAttemptOne is Publish's step 1: attempt 1 added to b's manifest
// (Complete false), or found there; the same batch id with a different
// task set is ErrBatchConflict.
func (c *Client) writeAttemptOne(ctx context.Context, b *Batch) attemptOne {
	var a1 attemptOne
	shared := false // a stored attempt has the same task set (a replay's)
	mine := messages.AttemptManifest{Total: len(b.Tasks), PublishedAt: time.Now().UTC(), Digest: b.Digest}
	if a1.err = c.setIDs(ctx, b.ID, &mine, taskIDs(b.Tasks)); a1.err != nil {
		return a1
	}
	a1.m, a1.rev, a1.err = c.createManifest(ctx, b.ID, func(m *messages.BatchManifest) error {
		a1.resume, a1.complete = false, false // applied again after a lost race
		a, ok := m.Attempt(1)
		if ok {
			if a.Digest != b.Digest || a.Total != len(b.Tasks) {
				shared = slices.ContainsFunc(slices.Collect(maps.Values(m.Attempts)), func(o messages.AttemptManifest) bool { return o.Digest == b.Digest })
				return fmt.Errorf("%w: batch %q: %s; a batch id is published once, with one task set: choose another batch id (or replay %s to run it again)",
					ErrBatchConflict, b.ID, c.conflictDetail(ctx, b.ID, a, b.Tasks), b.ID)
			}
			a1.resume, a1.complete = true, a.Complete
			return nil
		}
		m.SetAttempt(1, mine)
		return nil
	})
	if errors.Is(a1.err, ErrBatchConflict) && !shared {
		c.dropIDs(ctx, b.ID, mine) // no stored attempt has these tasks
	}
	return a1
}

// dropAttemptOne removes the manifest writeAttemptOne created for a
// publication that sent no task (refused before its first), so no batch
// is left that looks as if its publisher had crashed; one it found (a
// resumed publication) stays. Unchecked: a manifest left over is what a
// publisher's crash leaves, and `warren submit` of the batch resumes it.
func (c *Client) dropAttemptOne(ctx context.Context, b *Batch, a1 attemptOne) {
	if a1.err != nil || a1.resume {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	kv, err := c.bucket(ctx, messages.NamespaceOf(b.ID).Batches())
	if err == nil {
		err = kv.Purge(ctx, b.ID, jetstream.LastRevision(a1.rev))
	}
	if err != nil {
		c.log.Debug().Err(err).Str("batch", b.ID).Msg("could not remove the manifest of a batch never published")
		return
	}
	if a, ok := a1.m.Attempt(1); ok {
		c.dropIDs(ctx, b.ID, a)
	}
}

// conflictDetail says how tasks differ from attempt a of batch as stored:
// the first id only one side has, or, with the same ids, that a body
// differs.
func (c *Client) conflictDetail(ctx context.Context, batch string, a messages.AttemptManifest, tasks []messages.Task) string {
	ids, err := c.attemptIDs(ctx, batch, a)
	if err != nil {
		c.log.Debug().Err(err).Str("batch", batch).Msg("could not read the stored task ids")
	}
	a.IDs = ids
	stored := make(map[string]bool, len(a.IDs))
	for _, id := range a.IDs {
		stored[id] = true
	}
	given := make(map[string]bool, len(tasks))
	for i := range tasks {
		given[tasks[i].ID] = true
		if len(a.IDs) > 0 && !stored[tasks[i].ID] {
			return fmt.Sprintf("task %q is not among the %d stored", tasks[i].ID, a.Total)
		}
	}
	for _, id := range a.IDs {
		if !given[id] {
			return fmt.Sprintf("stored task %q is missing", id)
		}
	}
	if len(a.IDs) == 0 {
		return fmt.Sprintf("%d tasks stored, %d given, with another digest", a.Total, len(tasks))
	}
	if id := c.differingTask(ctx, batch, tasks); id != "" {
		return fmt.Sprintf("task %q has another body than the one stored under its id (the stream keeps the first body of an id and drops a re-publish as a duplicate)", id)
	}
	return "the same task ids, but a task's body differs (the stream keeps the first body of an id and drops a re-publish as a duplicate)"
}

// conflictScanMax is the largest batch whose stored tasks conflictDetail
// reads to name the one whose body differs.
const conflictScanMax = 10_000

// differingTask names the first of tasks whose body differs from the one
// stored under its id in attempt 1 of batch, or "" when it cannot tell
// (a larger batch, a task with secrets, which are stored sealed, or the
// stored tasks unreadable).
func (c *Client) differingTask(ctx context.Context, batch string, tasks []messages.Task) string {
	if len(tasks) > conflictScanMax {
		return ""
	}
	stored, err := c.scanTasks(ctx, taskScan{Batch: batch, Attempt: 1})
	if err != nil {
		c.log.Debug().Err(err).Str("batch", batch).Msg("could not read the stored tasks")
		return ""
	}
	byID := make(map[string][]byte, len(stored))
	for _, st := range stored {
		if _, ok := byID[st.ID]; !ok {
			byID[st.ID] = st.Data
		}
	}
	for i := range tasks {
		data, ok := byID[tasks[i].ID]
		if !ok || len(tasks[i].Secrets) > 0 {
			continue
		}
		st, err := messages.DecodeTask(data)
		if err != nil || len(st.Secrets) > 0 || st.SealedSecrets != nil {
			continue
		}
		if digestTasks([]messages.Task{*st}) != digestTasks(tasks[i:i+1]) {
			return tasks[i].ID
		}
	}
	return ""
}

// taskIDs lists the ids of tasks, in order, for the manifest.
func taskIDs(tasks []messages.Task) []string {
	ids := make([]string, len(tasks))
	for i := range tasks {
		ids[i] = tasks[i].ID
	}
	return ids
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
	msg *nats.Msg
	fut jetstream.PubAckFuture
	r   retrier
}

// publishAll publishes msgs with bounded in-flight acks and returns how
// many the stream stored anew and how many it reported as duplicates. A
// publication that fails while the broker is unavailable (a restart, a
// leader change, a reconnecting connection) is published again with the
// same Nats-Msg-Id until Config.RetryFor has passed since its first
// failure, so it is stored exactly once.
func (c *Client) publishAll(ctx context.Context, msgs []*nats.Msg) (stored, dups int, err error) {
	window := make([]*inflight, 0, c.cfg.MaxInflight)
	send := func(p *inflight) error {
		for {
			fut, err := c.js.PublishMsgAsync(cloneMsg(p.msg))
			if err == nil {
				p.fut = fut
				return nil
			}
			if gerr := p.r.again(ctx, err, true); gerr != nil {
				return fmt.Errorf("scheduler: publish task %s: %w", p.msg.Header.Get(messages.HeaderMsgID), gerr)
			}
		}
	}
	settle := func(p *inflight) error {
		for {
			select {
			case ack := <-p.fut.Ok():
				if want := messages.NamespaceOf(p.msg.Header.Get(messages.HeaderBatch)).Tasks(); ack.Stream != want {
					return fmt.Errorf("scheduler: task %s stored in stream %q, want %s: another stream captures %s", p.msg.Header.Get(messages.HeaderMsgID), ack.Stream, want, p.msg.Subject)
				}
				if ack.Duplicate {
					dups++
				} else {
					stored++
				}
				p.r.recovered()
				return nil
			case perr := <-p.fut.Err():
				if errors.Is(perr, jetstream.ErrStreamMessageExceedsMaximum) {
					// A batch of one is not size-checked ahead (checkSizes).
					return fmt.Errorf("scheduler: publish task %s: %w", p.msg.Header.Get(messages.HeaderMsgID), c.tooLarge(ctx, p.msg))
				}
				// An ack timeout has waited already; anything else failed
				// at once and waits before the next try.
				wait := !errors.Is(perr, jetstream.ErrAsyncPublishTimeout)
				if gerr := p.r.again(ctx, perr, wait); gerr != nil {
					return fmt.Errorf("scheduler: publish task %s: %w", p.msg.Header.Get(messages.HeaderMsgID), broker.ExplainPublish(messages.NamespaceOf(p.msg.Header.Get(messages.HeaderBatch)).Tasks(), gerr))
				}
				c.log.Debug().Err(perr).Str("msg_id", p.msg.Header.Get(messages.HeaderMsgID)).Int("try", p.r.tries).Msg("re-publishing task")
				if err := send(p); err != nil {
					return err
				}
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
		p := &inflight{msg: m, r: retrier{c: c, what: "publish"}}
		if err := send(p); err != nil {
			return stored, dups, err
		}
		window = append(window, p)
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
