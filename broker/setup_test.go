package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
)

func TestSetupIsIdempotent(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx := context.Background()
	require.NoError(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))
	for _, name := range []string{messages.StreamTasks, messages.StreamResults, messages.StreamDLQ} {
		_, err := b.JS.Stream(ctx, name)
		require.NoError(t, err, name)
	}
	_, err := broker.EnsureConsumer(ctx, b.JS, "default", "default", broker.ConsumerConfig{})
	require.NoError(t, err)
	_, err = broker.EnsureConsumer(ctx, b.JS, "default", "default", broker.ConsumerConfig{})
	require.NoError(t, err)
}

func TestTaskDedupByMsgID(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx := context.Background()
	subj := messages.TaskSubject("default", "default", "b1")
	for range 3 {
		_, err := b.JS.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: []byte(`{}`), Header: nats.Header{messages.HeaderMsgID: []string{"b1.t1.1"}}})
		require.NoError(t, err)
	}
	info, err := b.JS.Stream(ctx, messages.StreamTasks)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.CachedInfo().State.Msgs)
}

func TestResultsOnePerAttemptEnforcedByBroker(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx := context.Background()
	subj := messages.ResultSubject("b1", 1, "t1")
	_, err := b.JS.Publish(ctx, subj, []byte(`first`))
	require.NoError(t, err)
	// A different payload without dedup id: refused by the per-subject limit.
	_, err = b.JS.Publish(ctx, subj, []byte(`second`))
	require.Error(t, err)
	require.True(t, broker.IsResultExists(err), "got %v", err)
	// Another attempt is kept apart.
	_, err = b.JS.Publish(ctx, messages.ResultSubject("b1", 2, "t1"), []byte(`replay`))
	require.NoError(t, err)
	s, err := b.JS.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	m, err := s.GetLastMsgForSubject(ctx, subj)
	require.NoError(t, err)
	require.Equal(t, "first", string(m.Data))
}

func TestRestartKeepsStore(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func() (*embedded.Server, jetstream.JetStream) {
		srv, err := embedded.New(embedded.Config{DataDir: dir, DontListen: true})
		require.NoError(t, err)
		require.NoError(t, srv.Start(ctx))
		nc, err := srv.Connect()
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		require.NoError(t, broker.Setup(ctx, js, broker.StreamConfig{}))
		return srv, js
	}
	srv, js := start()
	_, err := js.Publish(ctx, messages.TaskSubject("default", "default", "b"), []byte("x"))
	require.NoError(t, err)
	srv.Stop()
	srv.Stop() // idempotent
	srv2, js2 := start()
	t.Cleanup(srv2.Stop)
	s, err := js2.Stream(ctx, messages.StreamTasks)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.CachedInfo().State.Msgs)
}

// The tasks stream stores only warren.tasks.<pool>.<profile>.<batch>: a
// task missing its batch token (or with extra tokens) is refused at once
// instead of being stored for days and never consumed. An existing stream
// with the old catch-all subject is refused by Setup (every process) and
// narrowed by Apply (`warren setup`).
func TestTasksStreamTakesOnlyWellFormedSubjects(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := b.JS.Stream(ctx, messages.StreamTasks)
	require.NoError(t, err)
	old := s.CachedInfo().Config
	old.Subjects = []string{"warren.tasks.>"}
	_, err = b.JS.UpdateStream(ctx, old)
	require.NoError(t, err, "the layout of an older deployment")
	var inc *broker.IncompatibleError
	require.ErrorAs(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}), &inc)
	require.Equal(t, "subjects", inc.Changes[0].Field)
	_, err = broker.Apply(ctx, b.JS, broker.StreamConfig{}, false)
	require.NoError(t, err)
	require.NoError(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))
	s, err = b.JS.Stream(ctx, messages.StreamTasks)
	require.NoError(t, err)
	require.Equal(t, []string{"warren.tasks.*.*.*"}, s.CachedInfo().Config.Subjects)

	// A tenant's batch (two tokens) is its own stream's: with no tenant
	// set up, nothing takes it.
	for _, subj := range []string{"warren.tasks.default.default", "warren.tasks.default", "warren.tasks.default.default.alice.b1.extra",
		messages.TaskSubject("default", "default", "alice.b1")} {
		_, err := b.JS.Publish(ctx, subj, []byte(`{}`))
		require.ErrorIs(t, err, jetstream.ErrNoStreamResponse, subj)
	}
	_, err = b.JS.Publish(ctx, messages.TaskSubject("default", "default", "b1"), []byte(`{}`))
	require.NoError(t, err)
	_, err = broker.SetupTenants(ctx, b.JS, broker.StreamConfig{}, []broker.Tenant{{Name: "alice"}}, false)
	require.NoError(t, err)
	ack, err := b.JS.Publish(ctx, messages.TaskSubject("default", "default", "alice.b1"), []byte(`{}`))
	require.NoError(t, err, "a tenant's batch is two tokens, in its own stream")
	require.Equal(t, messages.Namespace{Tenant: "alice"}.Tasks(), ack.Stream)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.Msgs)
}

func TestMissingListsWhatSetupCreates(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{NoSetup: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	missing, err := broker.Missing(ctx, b.JS)
	require.NoError(t, err)
	require.Contains(t, missing, messages.StreamTasks)
	require.Contains(t, missing, messages.BucketOutputs)
	require.NoError(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))
	missing, err = broker.Missing(ctx, b.JS)
	require.NoError(t, err)
	require.Empty(t, missing)
}
