package worker

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
)

// emitter publishes a task's live events in order with gap-free sequence
// numbers. One mutex covers numbering and publishing, so the order on the
// wire is the numbering order (NATS keeps a connection's publish order).
type emitter struct {
	mu      sync.Mutex
	nc      *nats.Conn
	subject string
	base    messages.Event
	seq     uint64
	closed  bool
}

func newEmitter(nc *nats.Conn, t *messages.Task, delivery int, host string) *emitter {
	return newEmitterTo(nc, messages.TaskIdentity{ID: t.ID, Batch: t.Batch, Attempt: t.EffectiveAttempt(), Reply: t.EffectiveReply()}, delivery, host)
}

// newEmitterTo is newEmitter for a task known only by its identity (an
// invalid body).
func newEmitterTo(nc *nats.Conn, ident messages.TaskIdentity, delivery int, host string) *emitter {
	return &emitter{
		nc:      nc,
		subject: ident.Reply,
		base: messages.Event{
			V: messages.Version, TaskID: ident.ID, Batch: ident.Batch,
			Attempt: ident.Attempt, Delivery: delivery, Host: host,
		},
	}
}

// emitError sends an error event carrying err's code.
func (e *emitter) emitError(err *messages.Error) {
	e.emit(messages.EventError, err.Msg, func(ev *messages.Event) { ev.Error = err })
}

// emit sends one event; fill sets type-specific fields. Publishing is
// best-effort: events are live telemetry, the result is the durable record.
func (e *emitter) emit(typ messages.EventType, data string, fill func(*messages.Event)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.seq++
	ev := e.base
	ev.Seq, ev.Type, ev.Data, ev.Time = e.seq, typ, data, time.Now().UTC()
	if fill != nil {
		fill(&ev)
	}
	b, err := json.Marshal(&ev)
	if err != nil {
		return
	}
	_ = e.nc.Publish(e.subject, b)
	if ev.Final {
		e.closed = true
	}
}

// capture keeps the first limit bytes of one output stream for the result
// and streams the same bytes as events. Beyond the limit it discards, but
// keeps accepting writes so the task never blocks on a full pipe.
type capture struct {
	mu        sync.Mutex
	em        *emitter
	typ       messages.EventType
	limit     int64
	buf       []byte
	truncated bool
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.limit - int64(len(c.buf))
	keep := p
	if int64(len(keep)) > room {
		keep = keep[:max(room, 0)]
		c.truncated = true
	}
	if len(keep) > 0 {
		c.buf = append(c.buf, keep...)
		c.em.emit(c.typ, string(keep), nil)
	}
	return len(p), nil
}

func (c *capture) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf), c.truncated
}
