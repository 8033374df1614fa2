package broker_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// TestAuthInvalidTaskAnsweredOnlyInItsPublishersBatch: bob publishes, on
// his own task subject, a malformed task whose body names alice's batch
// and task (ahead of her, on a batch id he guessed). The worker answers it
// in bob's batch only: no result and no event reach alice's batch, and
// her real task then runs. The control: the same malformed body naming
// bob's own batch is answered there, under its own id.
func TestAuthInvalidTaskAnsweredOnlyInItsPublishersBatch(t *testing.T) {
	f := startAuthFleet(t)
	startTenantWorker(t, f)

	alice, bob, admin := f.as(t, "alice.creds"), f.as(t, "bob.creds"), f.as(t, broker.AdminCreds)
	aliceEvents, err := alice.nc.SubscribeSync(messages.SubjectEventsPrefix + ".alice.>")
	require.NoError(t, err)
	require.NoError(t, alice.nc.Flush())
	bobResults := resultsOf(t, admin, "bob.b1")

	forged := `{"v":1,"id":"t1","batch":"alice.b1","kind":"exec","shell":"echo forged","bogus":true}`
	require.NoError(t, bob.nc.Publish(messages.TaskSubject("default", "default", "bob.b1"), []byte(forged)))
	r := nextResult(t, bobResults)
	require.Equal(t, "bob.b1", r.Batch, "answered in the publisher's batch")
	require.Equal(t, messages.StatusInvalid, r.Status)
	require.NotEqual(t, "t1", r.TaskID, "not under the id the body claimed for another batch")

	// The control: a malformed body naming bob's own batch is answered
	// there under its own id.
	own := `{"v":1,"id":"t9","batch":"bob.b1","kind":"exec","shell":"echo","bogus":true}`
	require.NoError(t, bob.nc.Publish(messages.TaskSubject("default", "default", "bob.b1"), []byte(own)))
	r = nextResult(t, bobResults)
	require.Equal(t, "t9", r.TaskID)
	require.Equal(t, messages.StatusInvalid, r.Status)

	_, err = aliceEvents.NextMsg(200 * time.Millisecond)
	require.ErrorIs(t, err, nats.ErrTimeout, "an event reached alice's subjects")
	got := runOne(t, tenantClient(t, alice, "alice"), "alice", "b1", messages.Task{ID: "t1", Kind: messages.KindExec, Shell: "echo mine"})
	require.Equal(t, messages.StatusOK, got.Status, "alice's own task ran: %+v", got)
	require.Contains(t, string(got.Stdout), "mine")
}

// resultsOf reads a batch's stored results in order, as the admin.
func resultsOf(t *testing.T, admin *client, batch string) jetstream.MessagesContext {
	t.Helper()
	c, err := admin.js.OrderedConsumer(ctx10(t), messages.NamespaceOf(batch).Results(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{messages.SubjectResultsPrefix + "." + batch + ".>"}})
	require.NoError(t, err)
	it, err := c.Messages()
	require.NoError(t, err)
	t.Cleanup(it.Stop)
	return it
}

func nextResult(t *testing.T, it jetstream.MessagesContext) *messages.Result {
	t.Helper()
	got := make(chan jetstream.Msg, 1)
	go func() {
		if m, err := it.Next(); err == nil {
			got <- m
		}
	}()
	select {
	case m := <-got:
		var r messages.Result
		require.NoError(t, json.Unmarshal(m.Data(), &r))
		return &r
	case <-time.After(15 * time.Second):
		t.Fatal("no result stored")
		return nil
	}
}
