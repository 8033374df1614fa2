package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/warrenhq/warren/messages"
)

// Cancel cancels one task of a batch attempt, or the whole attempt when id
// is empty, by putting messages.CancelKey(batch, attempt, id) in the cancel
// bucket. Attempt 0 means the latest attempt of the batch. Workers watch the
// bucket: they kill a running sandbox of a cancelled task and store a
// `cancelled` result for one they pull later. Cancelling twice is harmless;
// a later replay (a new attempt) is not affected.
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
	if attempt <= 0 {
		attempt = 1
		if m, err := c.Manifest(ctx, batch); err == nil {
			attempt = max(m.LatestAttempt(), 1)
		}
	}
	kv, err := c.bucket(ctx, messages.BucketCancel)
	if err != nil {
		return err
	}
	data, err := json.Marshal(messages.CancelRequest{Reason: reason, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, messages.CancelKey(batch, attempt, id), data); err != nil {
		return fmt.Errorf("scheduler: cancel %s: %w", messages.CancelKey(batch, attempt, id), err)
	}
	return nil
}
