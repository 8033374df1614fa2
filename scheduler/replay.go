package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
)

// ReplayOptions select what to replay from WARREN_TASKS.
type ReplayOptions struct {
	Batch string
	// FromSeq and ToSeq bound the TASKS stream sequences replayed
	// (inclusive; 0 = unbounded). Since (inclusive) and Until (exclusive)
	// bound the time the tasks were stored. Both may be combined; with none
	// set the whole batch is replayed.
	FromSeq, ToSeq uint64
	Since, Until   time.Time
	// NoCache sets verify.no_cache on every replayed verify task, so each
	// proof is checked afresh instead of being answered from the verdict
	// cache (which would answer a replay of a decided proof otherwise).
	NoCache bool
}

// ReplayReport says what a replay published.
type ReplayReport struct {
	Batch   string
	Attempt int // the new attempt; its results are kept apart from earlier ones
	Total   int // distinct tasks replayed
	// Invalid counts stored messages skipped because they are not valid
	// tasks (published by another client without validation).
	Invalid            int
	Stored, Duplicates int
}

// Replay republishes the tasks of a batch, or of a sequence or time range of
// it, as a new attempt: attempt = highest attempt so far + 1, claimed in the
// manifest with compare-and-set (two concurrent replays get two attempts).
// Each task id is replayed once, whatever attempts of it the range holds.
// The new attempt's tasks have new Nats-Msg-Ids and their results go to
// their own subjects, so earlier results stay untouched. A replay that fails
// midway leaves its attempt incomplete; replaying again makes a new one.
func (c *Client) Replay(ctx context.Context, o ReplayOptions) (*ReplayReport, error) {
	if err := checkBatchID(o.Batch); err != nil {
		return nil, fmt.Errorf("scheduler: replay: %w", err)
	}
	if o.FromSeq > 0 && o.ToSeq > 0 && o.FromSeq > o.ToSeq {
		return nil, fmt.Errorf("scheduler: replay: from sequence %d is after to sequence %d", o.FromSeq, o.ToSeq)
	}
	if !o.Since.IsZero() && !o.Until.IsZero() && !o.Since.Before(o.Until) {
		return nil, fmt.Errorf("scheduler: replay: since %s is not before until %s", o.Since, o.Until)
	}
	found, err := c.scanTasks(ctx, taskScan{Batch: o.Batch, FromSeq: o.FromSeq, ToSeq: o.ToSeq, Since: o.Since, Until: o.Until})
	if err != nil {
		return nil, err
	}
	rep := &ReplayReport{Batch: o.Batch}
	var (
		tasks      []messages.Task
		seen       = map[string]bool{}
		maxAttempt int
		replayOf   int
	)
	for _, st := range found {
		maxAttempt = max(maxAttempt, st.Attempt)
		if seen[st.ID] {
			continue
		}
		t, err := messages.DecodeTask(st.Data)
		if err == nil {
			err = messages.CheckReply(t, c.cfg.InboxPrefixes)
		}
		if err != nil {
			rep.Invalid++
			c.log.Warn().Err(err).Uint64("seq", st.Seq).Msg("not replaying a stored message that is not a valid task")
			continue
		}
		seen[st.ID] = true
		if o.NoCache && t.Verify != nil {
			t.Verify.NoCache = true
		}
		if replayOf == 0 || t.EffectiveAttempt() < replayOf {
			replayOf = t.EffectiveAttempt()
		}
		tasks = append(tasks, *t)
	}
	if len(tasks) == 0 {
		return rep, fmt.Errorf("%w: batch %q has no tasks in the selected range", ErrEmptyBatch, o.Batch)
	}
	// Attempts outside the range count too: the new attempt is above all.
	all, err := c.scanTasks(ctx, taskScan{Batch: o.Batch, HeadersOnly: true})
	if err != nil {
		return rep, err
	}
	for _, st := range all {
		maxAttempt = max(maxAttempt, st.Attempt)
	}
	// All or nothing: check the sizes as the next attempt before claiming it.
	lines := make([]int, len(tasks))
	for i := range lines {
		lines[i] = i + 1
	}
	msgs, err := attemptMsgs(tasks, maxAttempt+1)
	if err != nil {
		return rep, err
	}
	limits, err := c.checkSizes(ctx, o.Batch, msgs, lines, 0)
	if err == nil {
		err = checkRoom(o.Batch, limits, msgs)
	}
	if err != nil {
		return rep, err
	}
	next := messages.AttemptManifest{Total: len(tasks), PublishedAt: time.Now().UTC(), Digest: digestTasks(tasks), ReplayOf: replayOf}
	if err := c.setIDs(ctx, o.Batch, &next, taskIDs(tasks)); err != nil {
		return rep, err
	}
	_, err = c.updateManifest(ctx, o.Batch, func(m *messages.BatchManifest) error {
		rep.Attempt = max(maxAttempt, m.LatestAttempt()) + 1
		m.SetAttempt(rep.Attempt, next)
		return nil
	})
	if err != nil {
		return rep, err
	}
	rep.Total = len(tasks)
	if rep.Attempt != maxAttempt+1 { // a concurrent replay took that one
		if msgs, err = attemptMsgs(tasks, rep.Attempt); err != nil {
			return rep, err
		}
	}
	rep.Stored, rep.Duplicates, err = c.publishAll(ctx, msgs)
	if err != nil {
		return rep, err
	}
	_, err = c.updateManifest(ctx, o.Batch, func(m *messages.BatchManifest) error {
		a, _ := m.Attempt(rep.Attempt)
		a.Complete = true
		m.SetAttempt(rep.Attempt, a)
		return nil
	})
	return rep, err
}

// attemptMsgs builds the messages of tasks as the given attempt.
func attemptMsgs(tasks []messages.Task, attempt int) ([]*nats.Msg, error) {
	msgs := make([]*nats.Msg, len(tasks))
	for i := range tasks {
		tasks[i].Attempt = attempt
		data, err := json.Marshal(&tasks[i])
		if err != nil {
			return nil, err
		}
		msgs[i] = taskMsg(&tasks[i], data)
	}
	return msgs, nil
}
