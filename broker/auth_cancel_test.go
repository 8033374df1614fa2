package broker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// TestAuthCancelOnlyInItsOwnNamespace: bob cannot reach alice's cancel
// bucket, so he writes the keys of her batches into his own. They cancel
// nothing: neither her queued task nor her running one. The control:
// the same key in alice's own bucket cancels her task.
func TestAuthCancelOnlyInItsOwnNamespace(t *testing.T) {
	f := startAuthFleet(t)
	startTenantWorker(t, f)
	alice, bob := f.as(t, "alice.creds"), f.as(t, "bob.creds")
	bobCancels, err := bob.js.KeyValue(ctx10(t), messages.Namespace{Tenant: "bob"}.Cancel())
	require.NoError(t, err)
	aliceCancels, err := alice.js.KeyValue(ctx10(t), messages.Namespace{Tenant: "alice"}.Cancel())
	require.NoError(t, err)
	sc := tenantClient(t, alice, "alice")
	run := func(batch, shell string) *messages.Result {
		t.Helper()
		return runOne(t, sc, "alice", batch, messages.Task{ID: "t1", Kind: messages.KindExec, Shell: shell})
	}

	// A queued task: the forged keys (whole attempt and the task) are there
	// before it is published.
	for _, key := range []string{messages.CancelKey("alice.queued", 1, ""), messages.CancelKey("alice.queued", 1, "t1")} {
		_, err = bobCancels.Put(ctx10(t), key, []byte(`{"reason":"forged"}`))
		require.NoError(t, err)
	}
	r := run("queued", "echo ran")
	require.Equal(t, messages.StatusOK, r.Status, "%+v", r)

	// A running task: the forged key lands once it has started.
	events, err := alice.nc.SubscribeSync(messages.EventSubject("alice.running", "t1"))
	require.NoError(t, err)
	require.NoError(t, alice.nc.Flush())
	forged := make(chan error, 1)
	go func() {
		if _, err := events.NextMsg(10 * time.Second); err != nil {
			forged <- err
			return
		}
		_, err := bobCancels.Put(ctx10(t), messages.CancelKey("alice.running", 1, ""), []byte(`{"reason":"forged"}`))
		forged <- err
	}()
	r = run("running", "sleep 2; echo done")
	require.Equal(t, messages.StatusOK, r.Status, "%+v", r)
	require.Equal(t, "done\n", string(r.Stdout))
	require.NoError(t, <-forged, "bob's key was written while the task ran")

	// The control: alice's own bucket cancels her queued task.
	_, err = aliceCancels.Put(ctx10(t), messages.CancelKey("alice.mine", 1, ""), []byte(`{"reason":"mine"}`))
	require.NoError(t, err)
	r = run("mine", "echo ran")
	require.Equal(t, messages.StatusCancelled, r.Status, "%+v", r)
}
