package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// Dead letters are kept once per task attempt (and reason), not per
// message or within a dedup time window: the same invalid attempt published
// again under another message id, or arriving any time later, adds none.
func TestInvalidAttemptIsDeadLetteredOnce(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "w1", workerOpts{})
	events := subscribeEvents(t, b.Conn, "dl", "t1")
	data := []byte(`{"v":1,"id":"t1","batch":"dl","kind":"bogus"}`)
	subject := messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, "dl")
	publishMsg(t, b.JS, subject, data, map[string]string{messages.HeaderMsgID: "first"})
	publishMsg(t, b.JS, subject, data, map[string]string{messages.HeaderMsgID: "second"})
	ci := consumerSettled(t, b.JS)
	require.EqualValues(t, 2, ci.Delivered.Consumer, "both messages were handled")

	r := collect(t, b.JS, "dl", 1, 10*time.Second)["t1"]
	require.Equal(t, messages.StatusInvalid, r.Status)
	require.EqualValues(t, 1, resultCount(t, b.JS, "dl"))
	events.wait(t, 10*time.Second)
	finals := 0
	for _, e := range events.snapshot() {
		if e.Final {
			finals++
		}
	}
	require.Equal(t, 1, finals, "the attempt was answered once")

	dlq, err := b.JS.Stream(context.Background(), messages.StreamDLQ)
	require.NoError(t, err)
	letter := messages.DLQSubject("invalid", "dl", 1, "t1")
	info, err := dlq.Info(context.Background(), jetstream.WithSubjectFilter(messages.DLQReasonFilter("invalid", "dl")))
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{letter: 1}, info.State.Subjects, "one dead letter for the attempt")

	// However late another comes, without any message id, a worker's
	// publish of it is refused.
	_, err = b.JS.Publish(context.Background(), letter, data, jetstream.WithExpectLastSequencePerSubject(0))
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, jetstream.JSErrCodeStreamWrongLastSequence, apiErr.ErrorCode)
}
