package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	if c.cfg.Tenant != "" {
		// A tenant's account imports only what submitting needs, not the
		// fleet's stream configuration. max_payload is then the bound; the
		// stream's max_msg_size leaves room for a MaxTaskBytes body with
		// headers of bounded ids (broker setup), so it does not bind first.
		return limit, what, nil
	}
	m, err := lookup(ctx, c, "stream "+messages.StreamTasks+" max_msg_size", func() (int64, error) {
		return c.streamMaxMsgSize(ctx, messages.StreamTasks) // the fleet's: a tenant returned above
	})
	if err != nil {
		return 0, "", err
	}
	if m > 0 && (limit <= 0 || m < limit) {
		limit, what = m, "the max_msg_size of stream "+messages.StreamTasks
	}
	return limit, what, nil
}

// checkSizes refuses the batch, before anything is written, when a task's
// message is larger than the broker stores: the server's max_payload (from
// its INFO) or, when smaller, the batch's task stream's max_msg_size. A
// stock nats-server takes 1 MiB, headers included, so a task just under
// messages.MaxTaskBytes can still be too large once its headers are added.
// lines[i] is the input line of msgs[i]. It returns the task stream's
// limits and state as read now, for the room check (checkRoom).
//
// A batch of one task (every `warren exec`) is checked against the
// server's max_payload alone, known from its INFO, and returns no limits:
// the stream's refusal of its only task is all or nothing too, and
// publishAll turns it into the same error (tooLarge), so its path pays no
// STREAM.INFO request, the slowest of the round trips before its
// publication.
func (c *Client) checkSizes(ctx context.Context, batch string, msgs []*nats.Msg, lines []int, show int) (*streamLimits, error) {
	limit, what := c.nc.MaxPayload(), "the broker's max_payload"
	var info *streamLimits
	if len(msgs) != 1 {
		stream := messages.NamespaceOf(batch).Tasks()
		si, err := retry(ctx, c, "read the limits of stream "+stream, func() (streamLimits, error) { return c.streamInfo(ctx, stream) })
		if err != nil {
			return nil, fmt.Errorf("scheduler: read the limits of stream %s (has the broker been set up?): %w", stream, err)
		}
		info = &si
		if m := si.Config.MaxMsgSize; m > 0 && (limit <= 0 || m < limit) {
			limit, what = m, "the max_msg_size of stream "+stream
		}
	}
	if limit <= 0 {
		return info, nil // limit unknown (not connected): the publish itself will say so
	}
	var problems []*LineError
	for i, m := range msgs {
		if n := wireSize(m); n > limit {
			problems = append(problems, &LineError{lines[i], &messages.Error{Code: messages.CodeTooLarge,
				Msg: fmt.Sprintf("the task's message is %d bytes with its headers, over %s of %d bytes; put large inputs in files or split the task", n, what, limit)}})
		}
	}
	if be := newBatchError(problems, show); be != nil {
		return nil, be
	}
	return info, nil
}

// tooLarge is the error for a task message the tasks stream refused as
// over its max_msg_size (read now, for the message).
func (c *Client) tooLarge(ctx context.Context, m *nats.Msg) error {
	what := "the max_msg_size of stream " + messages.StreamTasks
	if limit, named, err := c.taskSizeLimit(ctx); err == nil && limit > 0 && limit < wireSize(m) {
		what = fmt.Sprintf("%s of %d bytes", named, limit)
	}
	return &messages.Error{Code: messages.CodeTooLarge,
		Msg: fmt.Sprintf("the task's message is %d bytes with its headers, over %s; put large inputs in files or split the task", wireSize(m), what)}
}

// streamMaxMsgSize is stream's max_msg_size (streamInfo).
func (c *Client) streamMaxMsgSize(ctx context.Context, stream string) (int64, error) {
	info, err := c.streamInfo(ctx, stream)
	return info.Config.MaxMsgSize, err
}

// streamLimits is what the scheduler reads of a stream's info: its limits
// and what it holds.
type streamLimits struct {
	Config struct {
		MaxMsgSize int64         `json:"max_msg_size"`
		MaxBytes   int64         `json:"max_bytes"`
		MaxMsgs    int64         `json:"max_msgs"`
		MaxAge     time.Duration `json:"max_age"`
	} `json:"config"`
	State struct {
		Msgs  uint64 `json:"messages"`
		Bytes uint64 `json:"bytes"`
	} `json:"state"`
}

// streamInfo reads stream's limits and state with one STREAM.INFO
// request decoded into those fields alone: the stream handle's full info
// (config, state, cluster) would cost a one-off command's start
// encoding/json's first look at its types, on the way to its
// publication. Errors are the handle's: ErrStreamNotFound for a stream
// that does not exist, ErrJetStreamNotEnabled when nothing answers.
func (c *Client) streamInfo(ctx context.Context, stream string) (streamLimits, error) {
	var resp struct {
		streamLimits
		Error *jetstream.APIError `json:"error"`
	}
	prefix := c.js.Options().APIPrefix
	if prefix == "" {
		prefix = jetstream.DefaultAPIPrefix
	} else if !strings.HasSuffix(prefix, ".") {
		prefix += "."
	}
	msg, err := c.nc.RequestWithContext(ctx, prefix+"STREAM.INFO."+stream, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		return resp.streamLimits, jetstream.ErrJetStreamNotEnabled
	}
	if err != nil {
		return resp.streamLimits, err
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return resp.streamLimits, fmt.Errorf("decode the info of stream %s: %w", stream, err)
	}
	switch {
	case resp.Error == nil:
		return resp.streamLimits, nil
	case resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound:
		return resp.streamLimits, jetstream.ErrStreamNotFound
	}
	return resp.streamLimits, resp.Error
}
