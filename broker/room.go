package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
)

// ErrNoRoom is the Err of a *StoreFullError whose batch the scheduler
// refused before publishing its first task: the stream's limits leave too
// little room for all of it.
var ErrNoRoom = errors.New("not enough room for the whole batch")

// Room is what a batch needs of a task stream and what the stream's limits
// leave, as read just before its publication (STREAM.INFO). Sizes are as
// the stream counts them (its file store's record size: subject, headers,
// body and a fixed overhead per message).
type Room struct {
	Batch               string
	NeedBytes, NeedMsgs int64
	// FreeBytes and FreeMsgs are max_bytes − bytes and max_msgs − msgs, at
	// least 0; -1 when the stream has no such limit.
	FreeBytes, FreeMsgs int64
	// MaxBytes and MaxMsgs are the stream's limits (-1: none), MaxAge how
	// long it keeps a message (0: for ever).
	MaxBytes, MaxMsgs int64
	MaxAge            time.Duration
}

// Fits reports whether the batch fits the room left.
func (r *Room) Fits() bool {
	return (r.FreeBytes < 0 || r.NeedBytes <= r.FreeBytes) && (r.FreeMsgs < 0 || r.NeedMsgs <= r.FreeMsgs)
}

func (r *Room) explain(stream string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stream %s has no room for batch %s, nothing was published: the batch needs %s in %d messages; the stream has %s and %s left (max_bytes %s, max_msgs %s)",
		stream, r.Batch, sizeText(r.NeedBytes), r.NeedMsgs, limitText(r.FreeBytes, sizeText), limitText(r.FreeMsgs, msgsText),
		limitText(r.MaxBytes, sizeText), limitText(r.MaxMsgs, decimal))
	b.WriteString(". To make it fit: ")
	b.WriteString(fixes(stream, r.MaxAge))
	b.WriteString(". Another publisher can still fill the stream between this check and the publication: the publication then stops part way with the batch's manifest incomplete, and submitting the same batch again resumes it")
	return b.String()
}

// Stopped is a batch whose publication a full stream stopped part way.
type Stopped struct {
	Batch string
	// Stored is how many of its Total tasks the stream holds (this
	// publication's and any earlier one's).
	Stored, Total int
}

func (s *Stopped) explain(stream string, err error) string {
	return fmt.Sprintf("stream %s filled up while batch %s was published (%v): at least %d of its %d tasks are stored and its manifest is incomplete; submitting the same batch again resumes it, publishing only the rest, once there is room: %s",
		stream, s.Batch, err, s.Stored, s.Total, fixes(stream, 0))
}

// fixes says how to make room in a task stream: wait, purge, split, or
// raise its limit (the admin's `warren setup`, or a tenant's quota).
func fixes(stream string, maxAge time.Duration) string {
	wait := "wait for old tasks to age out"
	if maxAge > 0 {
		wait += " (max_age " + maxAge.String() + ")"
	}
	raise := fmt.Sprintf("raise the limit (`warren setup --max-bytes %s=SIZE`)", stream)
	purge := fmt.Sprintf("purge finished batches (`nats stream purge %s --subject '%s'`)", stream, messages.BatchTaskFilter("BATCH"))
	if tenant, ok := tenantOfName(stream); ok {
		raise = fmt.Sprintf("have the admin raise tenant %s's quota (`warren auth quota %s task_bytes=SIZE task_msgs=N`)", tenant, tenant)
		purge = fmt.Sprintf("have the admin purge finished batches (`nats stream purge %s --subject '%s'`)", stream, messages.BatchTaskFilter(tenant+".BATCH"))
	}
	return strings.Join([]string{wait, purge, "split the batch", raise}, ", ")
}

func sizeText(n int64) string {
	if n < 10<<10 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	return fmt.Sprintf("%.1f %s (%d bytes)", v, units[i], n)
}

func msgsText(n int64) string { return decimal(n) + " messages" }

func decimal(n int64) string { return strconv.FormatInt(n, 10) }

// limitText formats a limit, -1 (or less) as unlimited.
func limitText(n int64, format func(int64) string) string {
	if n < 0 {
		return "unlimited"
	}
	return format(n)
}
