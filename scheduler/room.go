package scheduler

import (
	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// recordOverhead is what the broker's file store adds to each message it
// stores, besides its subject, headers and body: the record's length (4
// bytes), sequence (8), timestamp (8), subject length (2), headers length
// (4) and hash (8). A stream's bytes (and so its max_bytes) count records
// of that size (nats-server's fileStoreMsgSize); a memory store counts
// less, so the estimate errs on the side of refusing.
const recordOverhead = 34

// storedSize is the bytes a task stream counts for m once stored.
func storedSize(m *nats.Msg) int64 {
	return recordOverhead + int64(len(m.Subject)) + wireSize(m)
}

// checkRoom refuses a batch, before its first task is published, when
// the task stream's limits (max_bytes − bytes, max_msgs − msgs, as
// checkSizes read them just before) leave too little room for all of
// msgs: a *broker.StoreFullError whose Room says what it needs, what is
// left and how to make room. Without limits (nil: a batch of one task,
// not checked ahead, as the stream's refusal of its only task is all or
// nothing already) nothing is checked.
func checkRoom(batch string, info *streamLimits, msgs []*nats.Msg) error {
	if info == nil || len(msgs) == 0 {
		return nil
	}
	room := roomFor(batch, *info, msgs)
	if room.Fits() {
		return nil
	}
	return &broker.StoreFullError{Stream: messages.NamespaceOf(batch).Tasks(), Err: broker.ErrNoRoom, Room: room}
}

// roomFor is what msgs need of a stream in state info, and what it has.
func roomFor(batch string, info streamLimits, msgs []*nats.Msg) *broker.Room {
	r := &broker.Room{Batch: batch, NeedMsgs: int64(len(msgs)), MaxAge: info.Config.MaxAge,
		MaxBytes: limitOrNone(info.Config.MaxBytes), MaxMsgs: limitOrNone(info.Config.MaxMsgs)}
	for _, m := range msgs {
		r.NeedBytes += storedSize(m)
	}
	r.FreeBytes = free(r.MaxBytes, info.State.Bytes)
	r.FreeMsgs = free(r.MaxMsgs, info.State.Msgs)
	return r
}

// limitOrNone reads a stream limit: 0 and negative mean none (-1).
func limitOrNone(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// free is what a limit leaves of used, at least 0; -1 without a limit.
func free(limit int64, used uint64) int64 {
	if limit < 0 {
		return -1
	}
	return max(limit-int64(min(used, uint64(limit))), 0)
}
