package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/warrenhq/warren/messages"
)

// Cancel cancels one task of a batch, or the whole batch when id is empty,
// by putting messages.CancelKey(batch, id) in the cancel bucket. Workers
// watch the bucket: they kill a running sandbox of a cancelled task and
// store a `cancelled` result for one they pull later. Cancelling twice is
// harmless. Every attempt of the batch is affected, including later replays
// while the key lives (the bucket's TTL).
func (c *Client) Cancel(ctx context.Context, batch, id, reason string) error {
	if err := checkBatchID(batch); err != nil {
		return fmt.Errorf("scheduler: cancel: %w", err)
	}
	if id != "" {
		t := messages.Task{V: messages.Version, ID: id, Batch: batch, Kind: messages.KindExec, Argv: []string{"x"}}
		if err := t.Validate(); err != nil {
			return fmt.Errorf("scheduler: cancel: %w", err)
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
	if _, err := kv.Put(ctx, messages.CancelKey(batch, id), data); err != nil {
		return fmt.Errorf("scheduler: cancel %s: %w", messages.CancelKey(batch, id), err)
	}
	return nil
}
