package scheduler

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
)

// wireSize is what the broker counts against its max_payload and a
// stream's max_msg_size: the encoded headers plus the body (the subject
// and reply are not part of it).
func wireSize(m *nats.Msg) int64 {
	return int64(m.Size() - len(m.Subject) - len(m.Reply))
}

// taskSizeLimit is the largest task message the broker stores: the
// connected server's max_payload (from its INFO) or, when smaller,
// WARREN_TASKS's max_msg_size; what names it; 0 when unknown.
func (c *Client) taskSizeLimit(ctx context.Context) (int64, string, error) {
	limit, what := c.nc.MaxPayload(), "the broker's max_payload"
	s, err := c.stream(ctx, messages.StreamTasks)
	if err != nil {
		return 0, "", err
	}
	if m := int64(s.CachedInfo().Config.MaxMsgSize); m > 0 && (limit <= 0 || m < limit) {
		limit, what = m, "the max_msg_size of stream "+messages.StreamTasks
	}
	return limit, what, nil
}

// checkSizes refuses the batch, before anything is written, when a task's
// message is larger than the broker stores (taskSizeLimit): a stock
// nats-server takes 1 MiB, headers included, so a task just under
// messages.MaxTaskBytes can still be too large once its headers are added.
// lines[i] is the input line of msgs[i].
func (c *Client) checkSizes(ctx context.Context, msgs []*nats.Msg, lines []int, show int) error {
	limit, what, err := c.taskSizeLimit(ctx)
	if err != nil || limit <= 0 {
		return err // limit unknown (not connected): the publish itself will say so
	}
	var problems []*LineError
	for i, m := range msgs {
		if n := wireSize(m); n > limit {
			problems = append(problems, &LineError{lines[i], &messages.Error{Code: messages.CodeTooLarge,
				Msg: fmt.Sprintf("the task's message is %d bytes with its headers, over %s of %d bytes; put large inputs in files or split the task", n, what, limit)}})
		}
	}
	if be := newBatchError(problems, show); be != nil {
		return be
	}
	return nil
}
