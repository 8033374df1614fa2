package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, brokertest.UpstreamLeaks()...)
}

type bundle struct {
	b   *brokertest.Broker
	c   *scheduler.Client
	ctx context.Context
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := brokertest.Start(t, brokertest.Options{})
	c, err := scheduler.New(b.Conn, scheduler.Config{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &bundle{b: b, c: c, ctx: ctx}
}

// jsonl renders n exec tasks, one per line, without ids or batch.
func jsonl(n int) string {
	var s strings.Builder
	for i := range n {
		fmt.Fprintf(&s, `{"kind":"exec","argv":["echo","%d"]}`+"\n", i)
	}
	return s.String()
}

func mustBatch(t *testing.T, n int, batch string) *scheduler.Batch {
	t.Helper()
	b, err := scheduler.ReadBatch(strings.NewReader(jsonl(n)), scheduler.BatchOptions{Batch: batch})
	require.NoError(t, err)
	return b
}

// storeResult stands in for a worker: it stores one result document.
func (x *bundle) storeResult(t *testing.T, batch string, attempt int, id string, st messages.Status, code int) {
	t.Helper()
	r := messages.Result{V: messages.Version, TaskID: id, Batch: batch, Attempt: attempt, Delivery: 1, Status: st, ExitCode: code}
	data, err := json.Marshal(&r)
	require.NoError(t, err)
	_, err = x.b.JS.Publish(x.ctx, messages.ResultSubject(batch, attempt, id), data)
	require.NoError(t, err)
}

// resultJSON is an ok result of attempt 1 of a task.
func resultJSON(t *testing.T, batch, id string) []byte {
	t.Helper()
	data, err := json.Marshal(&messages.Result{V: messages.Version, TaskID: id, Batch: batch, Attempt: 1, Delivery: 1, Status: messages.StatusOK})
	require.NoError(t, err)
	return data
}

func (x *bundle) streamMsgs(t *testing.T, stream, filter string) uint64 {
	t.Helper()
	s, err := x.b.JS.Stream(x.ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(x.ctx, jetstream.WithSubjectFilter(filter))
	require.NoError(t, err)
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// storedTasks decodes every task message of a batch in TASKS.
func (x *bundle) storedTasks(t *testing.T, batch string) []jetstream.Msg {
	t.Helper()
	cons, err := x.b.JS.OrderedConsumer(x.ctx, messages.StreamTasks, jetstream.OrderedConsumerConfig{FilterSubjects: []string{messages.BatchTaskFilter(batch)}})
	require.NoError(t, err)
	var out []jetstream.Msg
	for {
		mb, err := cons.FetchNoWait(1000)
		require.NoError(t, err)
		n := 0
		for m := range mb.Messages() {
			out = append(out, m)
			n++
		}
		require.NoError(t, mb.Error())
		if n == 0 {
			return out
		}
	}
}

// storeResultAs stores a result naming task id on the subject of subjectID.
func (x *bundle) storeResultAs(t *testing.T, batch string, attempt int, subjectID, id string) {
	t.Helper()
	r := messages.Result{V: messages.Version, TaskID: id, Batch: batch, Attempt: attempt, Delivery: 1, Status: messages.StatusOK}
	data, err := json.Marshal(&r)
	require.NoError(t, err)
	_, err = x.b.JS.Publish(x.ctx, messages.ResultSubject(batch, attempt, subjectID), data)
	require.NoError(t, err)
}

// ctxFetch bounds a fake worker's wait for a task by the test's context.
func (x *bundle) ctxFetch() jetstream.FetchOpt { return jetstream.FetchContext(x.ctx) }
