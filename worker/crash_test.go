package worker_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
)

// startDoomedWorker runs a worker process that the test will SIGKILL. The
// consumer's AckWait is set by whoever creates it first: this worker, with a
// short one, so redelivery comes quickly.
func startDoomedWorker(t *testing.T, b *brokertest.Broker, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperWorkerEnv+"="+b.URL, "WARREN_TEST_SCRATCH="+t.TempDir()), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	return cmd
}

func TestWorkerSIGKILLMidBatchLosesAndDoublesNothing(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	cmd := startDoomedWorker(t, b)

	const n = 40
	var tasks []messages.Task
	for _, id := range ids(n) {
		tasks = append(tasks, shTask("crash", id, "sleep 0.2; echo $$"))
	}
	publish(t, b.JS, tasks...)
	// Kill it once it has finished some tasks and holds others.
	require.Eventually(t, func() bool { return resultCount(t, b.JS, "crash") >= 5 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	before := resultCount(t, b.JS, "crash")
	require.Less(t, before, uint64(n), "the worker died mid-batch")

	startWorker(t, b, "survivor", workerOpts{capacity: 4, ackWait: 2 * time.Second})
	got := collect(t, b.JS, "crash", n, 2*time.Minute)
	require.Len(t, got, n)
	for id, r := range got {
		require.Equal(t, messages.StatusOK, r.Status, id)
	}
	require.EqualValues(t, n, resultCount(t, b.JS, "crash"), "nothing doubled in RESULTS")
	redelivered := 0
	for _, r := range got {
		if r.Delivery > 1 {
			redelivered++
			require.Equal(t, "survivor", r.Host)
		}
	}
	require.Positive(t, redelivered, "the killed worker's tasks were redelivered")
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestBrokerRestartMidBatchLosesNothing(t *testing.T) {
	dir, port := t.TempDir(), freePort(t)
	b := brokertest.Start(t, brokertest.Options{Dir: dir, Port: port})
	startWorker(t, b, "w1", workerOpts{capacity: 3})
	const n = 60
	var tasks []messages.Task
	for _, id := range ids(n) {
		tasks = append(tasks, shTask("restart", id, "sleep 0.05"))
	}
	publish(t, b.JS, tasks...)
	require.Eventually(t, func() bool { return resultCount(t, b.JS, "restart") >= 10 }, time.Minute, 10*time.Millisecond)
	b.Server.Stop()

	srv, err := embedded.New(embedded.Config{DataDir: dir, Port: port})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	b2 := &brokertest.Broker{Server: srv, URL: srv.ClientURL(), Dir: dir}
	_, js := b2.Dial(t, "after-restart")
	got := collect(t, js, "restart", n, 2*time.Minute)
	require.Len(t, got, n)
	require.EqualValues(t, n, resultCount(t, js, "restart"))
}

func TestDeathOnLastDeliveryIsDeadLettered(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	// One delivery allowed: the worker holding the task dies, so the server
	// gives up and publishes a max-deliveries advisory.
	cmd := startDoomedWorker(t, b, "WARREN_TEST_MAX_DELIVER=1")
	events := subscribeEvents(t, b.Conn, "last", "t1")
	publish(t, b.JS, shTask("last", "t1", "sleep 60"))
	cons, err := b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName("default", "default"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ci, err := cons.Info(context.Background())
		return err == nil && ci.NumAckPending == 1
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	// Another worker sees the advisory: a dead letter and an infra_error
	// result, so the batch completes.
	startWorker(t, b, "survivor", workerOpts{maxDeliver: 1, ackWait: 2 * time.Second})
	r := collect(t, b.JS, "last", 1, time.Minute)["t1"]
	require.Equal(t, messages.StatusInfraError, r.Status)
	require.Equal(t, messages.CodeMaxDeliveries, r.Error.Code)
	// The worker that gave up speaks for the dead one, as the next delivery.
	evs := events.wait(t, 30*time.Second)
	requireEnding(t, evs, messages.CodeMaxDeliveries, messages.StatusInfraError)
	require.Equal(t, 2, evs[len(evs)-1].Delivery)
	dlq, err := b.JS.Stream(context.Background(), messages.StreamDLQ)
	require.NoError(t, err)
	m, err := dlq.GetLastMsgForSubject(context.Background(), messages.DLQSubject("max_deliveries", "last", 1, "t1"))
	require.NoError(t, err)
	task, err := messages.DecodeTask(m.Data)
	require.NoError(t, err, "the dead letter keeps the original payload")
	require.Equal(t, "t1", task.ID)
}
