package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/warrenhq/warren/messages"
)

// Cancel cancels one task of a batch attempt, or the whole attempt when id
// is empty, by putting messages.CancelKey(batch, attempt, id) in the cancel
// bucket. Attempt 0 means the latest attempt of the batch. Workers watch the
// bucket: they kill a running sandbox of a cancelled task and store a
// `cancelled` result for one they pull later. Cancelling twice is harmless;
// a later replay (a new attempt) is not affected.
//
// Only what exists is cancelled: a batch (and attempt) with a manifest or
// with tasks or results in the streams, and a task id stored in that
// attempt. Anything else is refused with ErrUnknownBatch or ErrUnknownTask
// and nothing is written, so a typo cannot cancel a future batch of that
// name.
func (c *Client) Cancel(ctx context.Context, batch string, attempt int, id, reason string) error {
	if err := checkBatchID(batch); err != nil {
		return fmt.Errorf("scheduler: cancel: %w", err)
	}
	if id != "" {
		t := messages.Task{V: messages.Version, ID: id, Batch: batch, Kind: messages.KindExec, Argv: []string{"x"}}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("scheduler: cancel: %w", err)
		}
	}
	attempt, err := c.existingAttempt(ctx, batch, attempt)
	if err != nil {
		return err
	}
	if id != "" {
		if err := c.checkTaskExists(ctx, batch, attempt, id); err != nil {
			return err
		}
	}
	return c.putCancel(ctx, batch, attempt, id, reason)
}

// existingAttempt resolves attempt (0: the latest) of a batch that exists.
func (c *Client) existingAttempt(ctx context.Context, batch string, attempt int) (int, error) {
	latest := 0
	m, err := c.Manifest(ctx, batch)
	switch {
	case err == nil:
		latest = m.LatestAttempt()
		if _, ok := m.Attempt(attempt); attempt > 0 && !ok {
			return 0, fmt.Errorf("%w %q: it has no attempt %d (latest is %d); nothing cancelled", ErrUnknownBatch, batch, attempt, latest)
		}
	default:
		if latest, err = c.latestStoredAttempt(ctx, batch); err != nil {
			return 0, err
		}
		if latest == 0 {
			return 0, fmt.Errorf("%w %q: no manifest, task or result of it exists; nothing cancelled", ErrUnknownBatch, batch)
		}
		if attempt > latest {
			return 0, fmt.Errorf("%w %q: it has no attempt %d (latest is %d); nothing cancelled", ErrUnknownBatch, batch, attempt, latest)
		}
	}
	if attempt <= 0 {
		attempt = max(latest, 1)
	}
	return attempt, nil
}

// checkTaskExists looks for task id of the attempt in the manifest's id
// list, else in TASKS (not for a tenant: its account cannot read the
// fleet's queue), then for its result in RESULTS.
func (c *Client) checkTaskExists(ctx context.Context, batch string, attempt int, id string) error {
	unknown := fmt.Errorf("%w %q in batch %q attempt %d: no such task; nothing cancelled", ErrUnknownTask, id, batch, attempt)
	if m, err := c.Manifest(ctx, batch); err == nil {
		a, ok := m.Attempt(attempt)
		var ids []string
		if ok {
			ids, err = c.attemptIDs(ctx, batch, a)
		}
		if err == nil && len(ids) > 0 {
			if slices.Contains(ids, id) {
				return nil
			}
			return unknown
		}
	}
	if c.cfg.Tenant == "" {
		stored, err := c.scanTasks(ctx, taskScan{Batch: batch, Attempt: attempt, HeadersOnly: true})
		if err != nil {
			return err
		}
		if slices.ContainsFunc(stored, func(st storedTask) bool { return st.ID == id }) {
			return nil
		}
	}
	m, err := c.lastMsg(ctx, messages.NamespaceOf(batch).Results(), messages.ResultSubject(batch, attempt, id))
	if err != nil {
		return err
	}
	if m == nil {
		return unknown
	}
	return nil
}

// putCancel writes the cancel key, unchecked.
func (c *Client) putCancel(ctx context.Context, batch string, attempt int, id, reason string) error {
	kv, err := c.bucket(ctx, messages.NamespaceOf(batch).Cancel())
	if err != nil {
		return err
	}
	data, err := json.Marshal(messages.CancelRequest{Reason: reason, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	key := messages.CancelKey(batch, attempt, id)
	if _, err := retry(ctx, c, "cancel", func() (uint64, error) { return kv.Put(ctx, key, data) }); err != nil {
		return fmt.Errorf("scheduler: cancel %s: %w", key, err)
	}
	return nil
}
