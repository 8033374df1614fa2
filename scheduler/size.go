package scheduler

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
)

// wireSize is what the broker counts against its max_payload: the encoded
// headers plus the body (the subject and reply are not part of it).
func wireSize(m *nats.Msg) int64 {
	return int64(m.Size() - len(m.Subject) - len(m.Reply))
}

// checkSizes refuses the batch, before anything is written, when a task's
// message is larger than the connected server accepts (its INFO
// max_payload): a stock nats-server takes 1 MiB, headers included, so a
// task just under messages.MaxTaskBytes can still be too large once its
// headers are added. lines[i] is the input line of msgs[i].
func (c *Client) checkSizes(msgs []*nats.Msg, lines []int, show int) error {
	limit := c.nc.MaxPayload()
	if limit <= 0 {
		return nil // not connected: the publish itself will say so
	}
	var problems []*LineError
	for i, m := range msgs {
		if n := wireSize(m); n > limit {
			problems = append(problems, &LineError{lines[i], &messages.Error{Code: messages.CodeTooLarge,
				Msg: fmt.Sprintf("the task's message is %d bytes with its headers, over the broker's max_payload of %d bytes; put large inputs in files or split the task", n, limit)}})
		}
	}
	if be := newBatchError(problems, show); be != nil {
		return be
	}
	return nil
}
