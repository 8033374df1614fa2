package worker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// The emitter's own guard: whatever subject it was given, it never
// publishes an event into a reserved namespace, and a worker's emitter
// falls back to the default event subject for a reply the rule refuses.
func TestEmitterNeverPublishesToReservedSubjects(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	got := make(chan *nats.Msg, 16)
	for _, s := range []string{"$KV.warren_cancel.V.1", "warren.results.V.1.v1", "warren.events.W.t"} {
		sub, err := b.Conn.ChanSubscribe(s, got)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	require.NoError(t, b.Conn.Flush())
	for _, s := range []string{"$KV.warren_cancel.V.1", "warren.results.V.1.v1"} {
		em := &emitter{nc: b.Conn, subject: s}
		em.emit(messages.EventStarted, "", nil)
	}
	w := &Worker{nc: b.Conn, cfg: Config{InboxPrefixes: messages.DefaultInboxPrefixes}}
	task := &messages.Task{V: 1, ID: "t", Batch: "W", Kind: messages.KindExec, Argv: []string{"x"}, Reply: "warren.results.V.1.v1"}
	w.newEmitter(task, 1).emit(messages.EventExit, "", nil)
	require.NoError(t, b.Conn.Flush())
	select {
	case m := <-got:
		require.Equal(t, "warren.events.W.t", m.Subject, "the refused reply fell back to the task's own event subject")
	case <-time.After(10 * time.Second):
		t.Fatal("the fallback event never arrived")
	}
	select {
	case m := <-got:
		t.Fatalf("an event reached %s", m.Subject)
	default:
	}
}

func TestConfigRefusesBadInboxPrefixAndSealKey(t *testing.T) {
	base := Config{Runner: fakeRunner{}}.withDefaults()
	bad := base
	bad.InboxPrefixes = []string{"warren."}
	require.ErrorContains(t, bad.validate(), "InboxPrefixes")
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	bad = base
	bad.SealKey = user
	require.ErrorContains(t, bad.validate(), "SealKey")
	curve, err := nkeys.CreateCurveKeys()
	require.NoError(t, err)
	good := base
	good.SealKey, good.InboxPrefixes = curve, []string{"_INBOX.", "_INBOX_team."}
	require.NoError(t, good.validate())
}

type fakeRunner struct{}

func (fakeRunner) Run(context.Context, sandbox.Spec) (*sandbox.Result, error) { return nil, nil }
