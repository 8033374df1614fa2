package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// BenchmarkPublish compares Publish (async, bounded in-flight, manifest
// writes) with a baseline of synchronous JetStream publishes of the same
// tasks, in the same run. Compare the tasks/s of the two sub-benchmarks.
func BenchmarkPublish(b *testing.B) {
	const n = 1000
	br := brokertest.Start(b, brokertest.Options{})
	c, err := scheduler.New(br.Conn, scheduler.Config{})
	require.NoError(b, err)
	ctx := context.Background()
	b.Run("sync-baseline", func(b *testing.B) {
		for i := range b.N {
			batch := mustBatchB(b, n, fmt.Sprintf("base%d", i))
			for _, t := range batch.Tasks {
				h := nats.Header{}
				h.Set(messages.HeaderMsgID, messages.MsgID(t.Batch, t.ID, 1))
				_, err := br.JS.PublishMsg(ctx, &nats.Msg{Subject: messages.TaskSubject("default", "default", t.Batch), Header: h, Data: []byte(t.Argv[1])})
				require.NoError(b, err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
	})
	b.Run("scheduler", func(b *testing.B) {
		for i := range b.N {
			_, err := c.Publish(ctx, mustBatchB(b, n, fmt.Sprintf("sched%d", i)))
			require.NoError(b, err)
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
	})
}

func mustBatchB(b *testing.B, n int, batch string) *scheduler.Batch {
	b.StopTimer()
	defer b.StartTimer()
	tasks := make([]messages.Task, n)
	for i := range tasks {
		tasks[i] = messages.Task{Kind: messages.KindExec, Argv: []string{"echo", fmt.Sprint(i)}}
	}
	bt, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{Batch: batch})
	require.NoError(b, err)
	return bt
}
