package worker

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
)

// TestIdentifyTakesTheBatchFromTheSubject: an invalid task is answered in
// the batch its subject names (the one the server authorised for its
// publisher), whatever its body or headers claim; a body or headers
// naming that same batch give the id, attempt and reply.
func TestIdentifyTakesTheBatchFromTheSubject(t *testing.T) {
	t.Parallel()
	bobs := messages.TaskSubject("default", "default", "bob.b1")
	hdr := func(batch, id, attempt string) nats.Header {
		h := nats.Header{}
		h.Set(messages.HeaderBatch, batch)
		h.Set(messages.HeaderTaskID, id)
		h.Set(messages.HeaderAttempt, attempt)
		return h
	}
	tests := []struct {
		name    string
		body    string
		header  nats.Header
		subject string
		want    messages.TaskIdentity
		ok      bool
	}{
		{"body names another tenant's batch", `{"id":"t1","batch":"alice.b1","kind":"exec","reply":"_WINBOX.alice.x"}`, nil, bobs,
			messages.TaskIdentity{ID: "seq-7", Batch: "bob.b1", Attempt: 1, Reply: messages.EventSubject("bob.b1", "seq-7")}, true},
		{"headers name another tenant's batch", `not json`, hdr("alice.b1", "t1", "3"), bobs,
			messages.TaskIdentity{ID: "seq-7", Batch: "bob.b1", Attempt: 1, Reply: messages.EventSubject("bob.b1", "seq-7")}, true},
		{"body names the subject's batch", `{"id":"t1","batch":"bob.b1","attempt":2,"kind":"nope"}`, nil, bobs,
			messages.TaskIdentity{ID: "t1", Batch: "bob.b1", Attempt: 2, Reply: messages.EventSubject("bob.b1", "t1")}, true},
		{"headers name the subject's batch", `not json`, hdr("bob.b1", "t2", "3"), bobs,
			messages.TaskIdentity{ID: "t2", Batch: "bob.b1", Attempt: 3, Reply: messages.EventSubject("bob.b1", "t2")}, true},
		{"headers without a batch", `not json`, func() nats.Header { h := hdr("", "t3", "2"); h.Del(messages.HeaderBatch); return h }(), bobs,
			messages.TaskIdentity{ID: "t3", Batch: "bob.b1", Attempt: 2, Reply: messages.EventSubject("bob.b1", "t3")}, true},
		{"a subject without a batch", `{"id":"t1","batch":"alice.b1"}`, nil, "warren.tasks.default",
			messages.TaskIdentity{ID: "seq-7", Batch: "unknown", Attempt: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.header
			if h == nil {
				h = nats.Header{}
			}
			got, ok := identify([]byte(tc.body), h, tc.subject, 7)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}
