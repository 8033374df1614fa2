package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// jsErrCodeStoreFailed is the JetStream API error code the server returns
// when a stream refuses a message by a DiscardNew limit
// (JSStreamStoreFailedF). The description tells which limit: the code is
// the same for "maximum messages per subject exceeded" (one result per
// attempt) and "maximum bytes exceeded" (the stream is full).
const jsErrCodeStoreFailed = 10077

// Descriptions the server gives for the DiscardNew limits (server/store.go).
const (
	descMaxMsgsPerSubject = "maximum messages per subject exceeded"
	descMaxBytes          = "maximum bytes exceeded"
	descMaxMsgs           = "maximum messages exceeded"
)

func storeFailed(err error, desc ...string) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrCodeStoreFailed {
		return false
	}
	for _, d := range desc {
		if strings.Contains(apiErr.Description, d) {
			return true
		}
	}
	return false
}

// IsResultExists reports whether a publish to RESULTS was refused because a
// result for that task attempt is already stored: the one-result rule doing
// its job, which a worker treats as success. A full RESULTS stream is not
// that (see IsStoreFull).
func IsResultExists(err error) bool {
	return storeFailed(err, descMaxMsgsPerSubject)
}

// IsStoreFull reports whether a publish was refused because the stream
// reached its byte or message limit.
func IsStoreFull(err error) bool {
	return storeFailed(err, descMaxBytes, descMaxMsgs)
}

// StoreFullError is a publish a full stream refused, or a batch refused
// before its first task because the stream has no room for all of it
// (Room set; Err is ErrNoRoom). Nothing of the refused message was
// stored; publishing again after space is freed (or the limit raised) is
// safe.
type StoreFullError struct {
	Stream string
	Err    error
	// Room, when set, is the batch the scheduler refused whole: what it
	// needs of Stream and what Stream has left. Nothing was published.
	Room *Room
	// Stopped, when set, is a batch whose publication the full stream
	// stopped part way: its manifest stays incomplete, and submitting the
	// same batch again resumes it.
	Stopped *Stopped
}

func (e *StoreFullError) Error() string {
	switch {
	case e.Room != nil:
		return e.Room.explain(e.Stream)
	case e.Stopped != nil:
		return e.Stopped.explain(e.Stream, e.Err)
	}
	if tenant, ok := tenantOfName(e.Stream); ok {
		return fmt.Sprintf("stream %s is full (%v): tenant %s has used its quota for it; nothing more is stored until its old messages age out (other tenants are not affected); the admin raises the quota with `warren auth quota %s key=SIZE` (`warren auth quota %s` shows it)", e.Stream, e.Err, tenant, tenant, tenant)
	}
	return fmt.Sprintf("stream %s is full (%v): nothing more is stored until old messages age out; raise its limit with `warren setup --max-bytes %s=SIZE`, or free space (results of finished batches: `nats stream purge`)", e.Stream, e.Err, e.Stream)
}

// tenantOfName is the tenant whose namespace a stream or bucket name
// belongs to (messages.Namespace: <base>_<tenant>).
func tenantOfName(name string) (string, bool) {
	for _, base := range []string{messages.StreamTasks, messages.StreamResults, messages.StreamDLQ, "KV_" + messages.BucketBatches,
		"KV_" + messages.BucketCancel, "KV_" + messages.BucketVerdicts, "OBJ_" + messages.BucketOutputs,
		"OBJ_" + messages.BucketInputs, messages.BucketBatches, messages.BucketCancel, messages.BucketVerdicts, messages.BucketOutputs,
		messages.BucketInputs} {
		if t, ok := strings.CutPrefix(name, base+"_"); ok && messages.ValidID(t) {
			return t, true
		}
	}
	return "", false
}

func (e *StoreFullError) Unwrap() error { return e.Err }

// ExplainPublish turns a publish error to stream into a *StoreFullError
// when the stream is full, and returns any other error as it is.
func ExplainPublish(stream string, err error) error {
	if err != nil && IsStoreFull(err) {
		return &StoreFullError{Stream: stream, Err: err}
	}
	return err
}
