package messages

import (
	"encoding/json"
	"time"
)

// EventType says what an Event carries.
type EventType string

// Event types, in the order a delivery produces them: started, then any
// number of stdout, stderr and keepalive, then an exit, or an error that
// ends the delivery (a retry follows) or precedes the final exit.
const (
	EventStarted   EventType = "started"
	EventStdout    EventType = "stdout"
	EventStderr    EventType = "stderr"
	EventKeepalive EventType = "keepalive"
	EventExit      EventType = "exit"
	EventError     EventType = "error"
)

// Event is one live message about a running task. Seq starts at 1 for each
// (task, attempt, delivery) and increases by one per event, so a gap means a
// lost event; a new Delivery means the task started over on another worker.
type Event struct {
	V        int       `json:"v"`
	TaskID   string    `json:"task_id"`
	Batch    string    `json:"batch"`
	Attempt  int       `json:"attempt"`
	Delivery int       `json:"delivery"`
	Seq      uint64    `json:"seq"`
	Type     EventType `json:"type"`
	Data     Bytes     `json:"data,omitempty"` // output chunk (any bytes), or a message for error
	Time     time.Time `json:"time"`
	Host     string    `json:"host,omitempty"`
	// Final is set on the last event of the task attempt: no event and no
	// redelivery follows. It is always an exit event carrying the stored
	// result's status; an error event is never final (a retry or the final
	// exit follows it).
	Final bool `json:"final,omitempty"`
	// Error is set on error events: the stable code and message.
	Error *Error `json:"error,omitempty"`
	// Set on exit events.
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Status   Status `json:"status,omitempty"`
	// Result, on a final event, is the result this delivery stored, its
	// bytes as stored, when they are at most FinalResultMax: a client
	// holding it need not read the result. Absent when larger, or when
	// another run had stored the attempt's result first (then read it).
	Result json.RawMessage `json:"result,omitempty"`
}

// FinalResultMax bounds the result a final event carries (Event.Result):
// a trivial task's is ~1 KB; one with much captured output is read.
const FinalResultMax = 32 << 10

// Terminal reports whether no event follows this one for its delivery
// except, after an error, the final exit.
func (e *Event) Terminal() bool { return e.Type == EventExit || e.Type == EventError }
