package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

func streamConfig(t *testing.T, js jetstream.JetStream, name string) jetstream.StreamConfig {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	require.NoError(t, err)
	return s.CachedInfo().Config
}

// edit changes a stream as `nats stream edit` does: through the JetStream
// API, behind Warren's back.
func edit(t *testing.T, js jetstream.JetStream, name string, change func(*jetstream.StreamConfig)) {
	t.Helper()
	cfg := streamConfig(t, js, name)
	change(&cfg)
	_, err := js.UpdateStream(context.Background(), cfg)
	require.NoError(t, err)
}

func TestSetupCreatesWithLimits(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	tasks := streamConfig(t, b.JS, messages.StreamTasks)
	require.Equal(t, broker.DefaultMaxBytes[messages.StreamTasks], tasks.MaxBytes)
	require.Equal(t, jetstream.DiscardNew, tasks.Discard, "a full TASKS must refuse new tasks, not drop unrun ones")
	require.EqualValues(t, broker.MaxTaskMsgBytes, tasks.MaxMsgSize)
	require.Equal(t, 1, tasks.Replicas, "a single server: R1")
	hosts := streamConfig(t, b.JS, "KV_"+messages.BucketHosts)
	require.Equal(t, broker.DefaultMaxBytes[messages.BucketHosts], hosts.MaxBytes)
	// Every process calls Setup: again and again, nothing to report.
	require.NoError(t, broker.Setup(context.Background(), b.JS, broker.StreamConfig{}))
	changes, err := broker.Apply(context.Background(), b.JS, broker.StreamConfig{}, true)
	require.NoError(t, err)
	require.Empty(t, changes)
}

// Tunables an operator set are never changed by Setup (what every worker,
// submit and `warren hosts` runs), and Apply changes them only when told.
func TestSetupKeepsOperatorTunables(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx := context.Background()
	edit(t, b.JS, messages.StreamTasks, func(c *jetstream.StreamConfig) { c.MaxAge, c.MaxBytes = 48*time.Hour, 1<<30 })
	edit(t, b.JS, "KV_"+messages.BucketBatches, func(c *jetstream.StreamConfig) { c.MaxBytes = 32 << 20 })
	require.NoError(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))
	changes, err := broker.Apply(ctx, b.JS, broker.StreamConfig{}, false)
	require.NoError(t, err)
	require.Empty(t, changes, "setup without flags keeps the operator's tunables")
	tasks := streamConfig(t, b.JS, messages.StreamTasks)
	require.Equal(t, 48*time.Hour, tasks.MaxAge)
	require.EqualValues(t, 1<<30, tasks.MaxBytes)
	require.EqualValues(t, 32<<20, streamConfig(t, b.JS, "KV_"+messages.BucketBatches).MaxBytes)

	// Told, Apply changes the one field of the one stream.
	changes, err = broker.Apply(ctx, b.JS, broker.StreamConfig{MaxAge: map[string]time.Duration{messages.StreamTasks: 72 * time.Hour}}, false)
	require.NoError(t, err)
	require.Equal(t, []broker.Change{{Kind: "stream", Name: messages.StreamTasks, Field: "max_age", Class: "tunable", Have: "2d", Want: "3d"}}, changes)
	require.Equal(t, 72*time.Hour, streamConfig(t, b.JS, messages.StreamTasks).MaxAge)
	require.EqualValues(t, 1<<30, streamConfig(t, b.JS, messages.StreamTasks).MaxBytes)
}

func TestSetupRefusesIncompatibleStreams(t *testing.T) {
	for _, tc := range []struct {
		stream, field string
		change        func(*jetstream.StreamConfig)
	}{
		{messages.StreamResults, "max_msgs_per_subject", func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 5 }},
		{messages.StreamResults, "discard_new_per_subject", func(c *jetstream.StreamConfig) { c.DiscardNewPerSubject = false }},
		{messages.StreamTasks, "discard", func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardOld }},
		{messages.StreamTasks, "duplicate_window", func(c *jetstream.StreamConfig) { c.Duplicates = time.Second }},
		{messages.StreamTasks, "subjects", func(c *jetstream.StreamConfig) { c.Subjects = append(c.Subjects, "other.>") }},
		// An older deployment's catch-all: stored tasks no consumer takes.
		{messages.StreamTasks, "subjects", func(c *jetstream.StreamConfig) { c.Subjects = []string{"warren.tasks.>"} }},
		{"KV_" + messages.BucketHosts, "ttl", func(c *jetstream.StreamConfig) { c.MaxAge = time.Hour }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Options{})
			ctx := context.Background()
			edit(t, b.JS, tc.stream, tc.change)
			err := broker.Setup(ctx, b.JS, broker.StreamConfig{})
			var inc *broker.IncompatibleError
			require.ErrorAs(t, err, &inc)
			require.Len(t, inc.Changes, 1)
			require.Equal(t, tc.field, inc.Changes[0].Field)
			require.Equal(t, strings.TrimPrefix(tc.stream, "KV_"), inc.Changes[0].Name)
			require.Contains(t, err.Error(), tc.field)
			require.Contains(t, err.Error(), "warren setup")

			// The dry run lists the fix and changes nothing.
			before := streamConfig(t, b.JS, tc.stream)
			changes, err := broker.Apply(ctx, b.JS, broker.StreamConfig{}, true)
			require.NoError(t, err)
			require.Len(t, changes, 1)
			require.Equal(t, tc.field, changes[0].Field)
			require.Equal(t, before, streamConfig(t, b.JS, tc.stream))
			require.Error(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))

			// `warren setup` fixes it, and every process runs again.
			changes, err = broker.Apply(ctx, b.JS, broker.StreamConfig{}, false)
			require.NoError(t, err)
			require.Len(t, changes, 1)
			require.NoError(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))
		})
	}
}

func TestApplyCreatesWhatIsMissing(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx := context.Background()
	require.NoError(t, b.JS.DeleteStream(ctx, messages.StreamDLQ))
	changes, err := broker.Apply(ctx, b.JS, broker.StreamConfig{}, true)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, messages.StreamDLQ, changes[0].Name)
	require.Contains(t, changes[0].String(), "create")
	_, err = b.JS.Stream(ctx, messages.StreamDLQ)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "a dry run creates nothing")
	_, err = broker.Apply(ctx, b.JS, broker.StreamConfig{}, false)
	require.NoError(t, err)
	_, err = b.JS.Stream(ctx, messages.StreamDLQ)
	require.NoError(t, err)
}

// A full stream refuses a publish at once with an error naming the stream
// and the fix, and a full RESULTS is never mistaken for "result exists".
func TestStoreFullIsAClearErrorNotAHang(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{Streams: broker.StreamConfig{MaxBytes: map[string]int64{"": 4 << 10}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	payload := []byte(strings.Repeat("x", 1500))
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = b.JS.PublishMsg(ctx, &nats.Msg{Subject: messages.TaskSubject("default", "default", "b1"), Data: payload,
			Header: nats.Header{messages.HeaderMsgID: []string{messages.MsgID("b1", string(rune('a'+i)), 1)}}})
	}
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "refused, not hung")
	require.True(t, broker.IsStoreFull(err), "%v", err)
	err = broker.ExplainPublish(messages.StreamTasks, err)
	var full *broker.StoreFullError
	require.True(t, errors.As(err, &full))
	require.Contains(t, err.Error(), messages.StreamTasks)
	require.Contains(t, err.Error(), "warren setup --max-bytes")

	var rerr error
	for i := 0; i < 10 && rerr == nil; i++ {
		_, rerr = b.JS.Publish(ctx, messages.ResultSubject("b1", 1, string(rune('a'+i))), payload)
	}
	require.True(t, broker.IsStoreFull(rerr), "%v", rerr)
	require.False(t, broker.IsResultExists(rerr), "a full RESULTS must not count as a stored result")
}

// The largest task validation accepts fits WARREN_TASKS with its headers;
// anything past the stream's MaxMsgSize is refused by the broker.
func TestMaxTaskFitsTasksStream(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx := context.Background()
	batch, id := strings.Repeat("b", 128), strings.Repeat("i", 128)
	msg := func(size int) *nats.Msg {
		h := nats.Header{}
		h.Set(messages.HeaderMsgID, messages.MsgID(batch, id+fmt.Sprint(size), 1))
		h.Set(messages.HeaderTaskID, id)
		h.Set(messages.HeaderBatch, batch)
		h.Set(messages.HeaderAttempt, "1")
		return &nats.Msg{Subject: messages.TaskSubject("default", "default", batch), Header: h, Data: make([]byte, size)}
	}
	_, err := b.JS.PublishMsg(ctx, msg(messages.MaxTaskBytes))
	require.NoError(t, err)
	_, err = b.JS.PublishMsg(ctx, msg(broker.MaxTaskMsgBytes+1))
	require.ErrorIs(t, err, jetstream.ErrStreamMessageExceedsMaximum)
}
