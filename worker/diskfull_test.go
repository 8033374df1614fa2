package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// The broker's data dir fills up while a batch runs, another batch is
// submitted while it is full, and the disk stays full while the worker
// retries its results for longer than the consumer's AckWait × MaxDeliver;
// then the space is freed: nobody restarts anything. The broker restarts
// its JetStream by itself, the second publication waits it out, and every
// task of both batches ends with exactly one result, its own: the outage
// cost no task a delivery (no dead letter, no infra_error).
func TestDiskFullMidBatchLosesNoTask(t *testing.T) {
	dir := brokertest.SmallDisk(t, 64<<20)
	b := brokertest.Start(t, brokertest.Options{Dir: dir, Streams: brokertest.SmallStreams(4 << 20),
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	wlog := &logLines{}
	startWorker(t, b, "w1", workerOpts{capacity: 4, ackWait: 3 * time.Second, maxDeliver: 1, logTo: wlog})
	nc, _ := b.Dial(t, "submitter")
	c, err := scheduler.New(nc, scheduler.Config{MaxInflight: 16, RetryFor: 5 * time.Minute})
	require.NoError(t, err)
	// As a client command's: no deadline, so each request to the broker
	// has its own timeout and is retried.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const n = 200
	before := diskBatch(t, "before", n)
	_, err = c.Publish(ctx, before)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return resultCount(t, b.JS, "before") >= 10 }, time.Minute, 10*time.Millisecond)

	free := brokertest.Fill(t, dir)
	require.Eventually(t, func() bool { return b.Server.Disk().StoreFailed }, time.Minute, 10*time.Millisecond,
		"a write to the full store failed")
	require.Less(t, resultCount(t, b.JS, "before"), uint64(n), "the batch was still running when the disk filled")
	during := diskBatch(t, "during", n)
	published := make(chan error, 1)
	go func() { _, err := c.Publish(ctx, during); published <- err }()
	// Six tries of one result (each waits 5s for an answer) outlast a
	// delivery that cannot claim its task (three tries), and the max
	// deliveries handler that cannot either (three more).
	require.Eventually(t, func() bool { return wlog.count(`"try":6,"message":"storing failed`) > 0 }, 2*time.Minute, 10*time.Millisecond,
		"the worker retries a result while the disk is full")
	require.True(t, b.Server.Disk().Low)
	free()

	require.NoError(t, <-published, "the publication rode the full disk")
	// A lost task would keep a collection waiting: bounded.
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
	defer ccancel()
	for _, batch := range []string{"before", "during"} {
		rep, err := c.Collect(cctx, scheduler.CollectOptions{Batch: batch})
		require.NoError(t, err, batch)
		require.Equal(t, n, rep.Received, "%s: every task has a result", batch)
		require.Equal(t, n, rep.Counts[messages.StatusOK], "%s: %v", batch, rep.Counts)
		require.Equal(t, map[string]uint64(nil), extraResults(t, b.JS, batch), "%s: exactly one result per task", batch)
	}
	dlq, err := b.JS.Stream(ctx, messages.StreamDLQ)
	require.NoError(t, err)
	info, err := dlq.Info(ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "no task was dead-lettered")
	require.GreaterOrEqual(t, b.Server.Disk().Restarts, 1, "the broker restarted its store by itself")
}

// diskBatch is n short tasks with some output each.
func diskBatch(t *testing.T, name string, n int) *scheduler.Batch {
	t.Helper()
	tasks := make([]messages.Task, n)
	for i := range tasks {
		tasks[i] = messages.Task{ID: fmt.Sprint("t", i), Kind: messages.KindExec, Shell: fmt.Sprintf("sleep 0.02; echo task %d of %s", i, name)}
	}
	b, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{Batch: name})
	require.NoError(t, err)
	return b
}

// extraResults maps each result subject of batch holding more than one
// message to its count; nil when none does.
func extraResults(t *testing.T, js jetstream.JetStream, batch string) map[string]uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), messages.NamespaceOf(batch).Results())
	require.NoError(t, err)
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(messages.BatchResultFilter(batch, 0)))
	require.NoError(t, err)
	var extra map[string]uint64
	for subj, n := range info.State.Subjects {
		if n > 1 {
			if extra == nil {
				extra = map[string]uint64{}
			}
			extra[subj] = n
		}
	}
	return extra
}

// logLines collects log lines, for waiting on what a component logged.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	if !strings.Contains(string(p), `"debug"`) {
		fmt.Print(string(p))
	}
	if !strings.Contains(string(p), `"debug"`) {
		fmt.Print(string(p))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

// count is how many lines hold sub.
func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}
