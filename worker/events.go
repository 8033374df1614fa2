package worker

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
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
	log     zerolog.Logger
	// mask, when set, hides the task's secrets in event data (output is
	// masked before it gets here, by capture; this catches messages).
	mask *secretMask
}

// sent is the seq of the last event sent (0 before the first).
func (e *emitter) sent() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq
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
	if typ != messages.EventStdout && typ != messages.EventStderr {
		data = e.mask.String(data)
	}
	ev.Seq, ev.Type, ev.Data, ev.Time = e.seq, typ, messages.Bytes(data), time.Now().UTC()
	if fill != nil {
		fill(&ev)
	}
	b, err := json.Marshal(&ev)
	if err != nil {
		return
	}
	if messages.ReservedSubject(e.subject) {
		// Unreachable through newEmitter; the last line of the reply rule.
		e.log.Error().Str("subject", e.subject).Msg("refusing to publish an event to a reserved subject")
		return
	}
	_ = e.nc.Publish(e.subject, b)
	if ev.Final {
		e.closed = true
	}
}

// capture keeps the first limit bytes of one output stream for the result
// and streams the same bytes as events. Beyond the limit it discards, but
// keeps accepting writes so the task never blocks on a full pipe. When the
// emitter has a secret mask, secrets are masked before anything is kept or
// sent.
type capture struct {
	mu        sync.Mutex
	em        *emitter
	typ       messages.EventType
	limit     int64
	buf       []byte
	truncated bool
	ms        *maskStream
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if c.em.mask != nil {
		if c.ms == nil {
			c.ms = &maskStream{m: c.em.mask}
		}
		p = c.ms.write(p, false)
	}
	c.keep(p)
	return n, nil
}

// keep stores and streams p, up to the limit.
func (c *capture) keep(p []byte) {
	room := c.limit - int64(len(c.buf))
	keep := p
	if int64(len(keep)) > room {
		keep = keep[:max(room, 0)]
		c.truncated = true
	}
	if len(keep) > 0 {
		c.buf = append(c.buf, keep...)
		c.em.emit(c.typ, string(keep), nil) // any bytes: Event.Data carries them as they are
	}
}

// result flushes what the mask held back and returns the kept output.
func (c *capture) result() (messages.Bytes, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ms != nil {
		c.keep(c.ms.write(nil, true))
	}
	return messages.Bytes(c.buf), c.truncated
}
