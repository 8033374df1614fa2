package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

func TestThousandTasksAcrossThreeWorkersRespectCapacity(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	capacities := []int{1, 2, 3}
	runners := make([]*countingRunner, len(capacities))
	for i, c := range capacities {
		runners[i] = &countingRunner{inner: insecureRunner(t)}
		startWorker(t, b, "w"+string(rune('a'+i)), workerOpts{capacity: c, runner: runners[i]})
	}
	const n = 1000
	tasks := make([]messages.Task, 0, n)
	for _, id := range ids(n) {
		tasks = append(tasks, execTask("big", id, "true"))
	}
	publish(t, b.JS, tasks...)
	got := collect(t, b.JS, "big", n, 3*time.Minute)
	require.Len(t, got, n)
	for _, id := range ids(n) {
		r := got[id]
		require.NotNil(t, r, id)
		require.Equal(t, messages.StatusOK, r.Status, id)
		require.Equal(t, 0, r.ExitCode)
	}
	require.EqualValues(t, n, resultCount(t, b.JS, "big"), "exactly one stored result per task")
	var calls int64
	for i, r := range runners {
		require.LessOrEqual(t, r.peak.Load(), int64(capacities[i]), "worker %d ran more tasks at once than its capacity", i)
		calls += r.calls.Load()
	}
	require.EqualValues(t, n, calls, "every task ran exactly once")
}

func TestEventsInOrderAndExitStatusPropagates(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "w1", workerOpts{capacity: 2})
	cases := []struct {
		name     string
		task     messages.Task
		status   messages.Status
		exitCode int
		signal   string
		stdout   string
	}{
		{"ok", shTask("ev", "ok", `for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done`), messages.StatusOK, 0, "", "out1\nout2\nout3\nout4\nout5\n"},
		{"exit code", shTask("ev", "code", `echo bye; exit 3`), messages.StatusFailed, 3, "", "bye\n"},
		{"signal", shTask("ev", "sig", `kill -9 $$`), messages.StatusKilled, -1, "SIGKILL", ""},
		{"timeout", func() messages.Task {
			tk := shTask("ev", "slow", `echo start; sleep 30`)
			tk.Limits.WallTimeoutMS = 300
			return tk
		}(), messages.StatusTimedOut, -1, "SIGKILL", "start\n"},
	}
	logs := map[string]*eventLog{}
	for _, c := range cases {
		logs[c.name] = subscribeEvents(t, b.Conn, c.task.Batch, c.task.ID)
		publish(t, b.JS, c.task)
	}
	results := collect(t, b.JS, "ev", len(cases), time.Minute)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := results[c.task.ID]
			require.Equal(t, c.status, r.Status)
			require.Equal(t, c.exitCode, r.ExitCode)
			require.Equal(t, c.signal, r.Signal)
			require.Equal(t, c.stdout, string(r.Stdout))
			evs := logs[c.name].wait(t, 30*time.Second)
			require.Equal(t, messages.EventStarted, evs[0].Type)
			var stdout strings.Builder
			for i, e := range evs {
				require.EqualValues(t, i+1, e.Seq, "events are numbered without gaps, in order")
				require.Equal(t, 1, e.Delivery)
				if e.Type == messages.EventStdout {
					stdout.Write(e.Data)
				}
			}
			last := evs[len(evs)-1]
			require.Equal(t, messages.EventExit, last.Type)
			require.NotNil(t, last.ExitCode)
			require.Equal(t, c.exitCode, *last.ExitCode)
			require.Equal(t, c.status, last.Status)
			require.Equal(t, c.stdout, stdout.String(), "live stdout equals the captured stdout")
		})
	}
}

func TestOutputCapTruncates(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "w1", workerOpts{})
	tk := shTask("cap", "big", `head -c 100000 /dev/zero | tr '\0' x`)
	tk.Limits.OutputBytes = 1000
	publish(t, b.JS, tk)
	r := collect(t, b.JS, "cap", 1, time.Minute)["big"]
	require.Equal(t, messages.StatusOK, r.Status, "the task is not blocked or failed by the cap")
	require.Len(t, r.Stdout, 1000)
	require.True(t, r.StdoutTruncated)
}

func TestInvalidTasksAreRefusedDeadLetteredAndNeverRedelivered(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	counting := &countingRunner{inner: insecureRunner(t)}
	// An AckWait far past the test's length: a second delivery can then
	// only come from the worker giving a refused task back, never from a
	// loaded host taking longer than the AckWait to refuse it.
	startWorker(t, b, "w1", workerOpts{runner: counting, ackWait: time.Minute})
	valid := func(id string, mut func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "id": id, "batch": "inv", "kind": "exec", "argv": []string{"true"}}
		mut(m)
		data, err := json.Marshal(m)
		require.NoError(t, err)
		return data
	}
	cases := []struct {
		id   string
		data []byte
		code messages.Code
	}{
		{"malformed", []byte(`{"v":1,"id":`), messages.CodeMalformed},
		{"unknown-kind", valid("unknown-kind", func(m map[string]any) { m["kind"] = "mine-bitcoin" }), messages.CodeUnknownKind},
		{"negative-limit", valid("negative-limit", func(m map[string]any) { m["limits"] = map[string]any{"memory_bytes": -1} }), messages.CodeInvalidField},
		{"oversize", valid("oversize", func(m map[string]any) { m["stdin"] = strings.Repeat("a", messages.MaxTaskBytes) }), messages.CodeTooLarge},
		{"bad-utf8", []byte("{\"v\":1,\"id\":\"bad-utf8\",\"batch\":\"inv\",\"kind\":\"exec\",\"argv\":[\"echo\",\"\xff\xfe\"]}"), messages.CodeInvalidUTF8},
		{"nul-argv", valid("nul-argv", func(m map[string]any) { m["argv"] = []string{"echo", "a\x00b"} }), messages.CodeNULByte},
		{"traversal", valid("traversal", func(m map[string]any) { m["files"] = map[string]string{"../../etc/cron.d/x": "boom"} }), messages.CodePathTraversal},
	}
	for _, c := range cases {
		publishRaw(t, b.JS, "inv", c.id, c.data)
	}
	results := collect(t, b.JS, "inv", len(cases), time.Minute)
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			r := results[c.id]
			require.NotNil(t, r, "the result is named after the Warren-Task-Id header")
			require.Equal(t, messages.StatusInvalid, r.Status)
			require.NotNil(t, r.Error)
			require.Equal(t, c.code, r.Error.Code, r.Error.Msg)
			require.NotEmpty(t, r.Error.Msg)
		})
	}
	require.Zero(t, counting.calls.Load(), "no invalid task reached a sandbox")

	// Each payload is in the dead letters, untouched.
	dlq, err := b.JS.Stream(context.Background(), messages.StreamDLQ)
	require.NoError(t, err)
	info, err := dlq.Info(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, len(cases), info.State.Msgs)
	m, err := dlq.GetLastMsgForSubject(context.Background(), messages.DLQSubject("invalid", "inv", 1, "traversal"))
	require.NoError(t, err)
	require.Equal(t, "invalid", m.Header.Get(messages.HeaderDLQReason))

	// Never redelivered: the worker still serves, and the consumer has
	// nothing pending or redelivered.
	publish(t, b.JS, execTask("after", "ok", "true"))
	require.Equal(t, messages.StatusOK, collect(t, b.JS, "after", 1, time.Minute)["ok"].Status)
	cons, err := b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName("default", "default"))
	require.NoError(t, err)
	// The last task's ack follows its stored result: wait for it.
	require.Eventually(t, func() bool {
		ci, err := cons.Info(context.Background())
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	}, 10*time.Second, 10*time.Millisecond)
	ci, err := cons.Info(context.Background())
	require.NoError(t, err)
	require.Zero(t, ci.NumRedelivered, "no task was delivered twice")
	require.EqualValues(t, len(cases)+1, ci.Delivered.Consumer, "one delivery per task")
}

// failingRunner fails every run with a setup error.
type failingRunner struct{ calls chan struct{} }

func (f *failingRunner) Run(context.Context, sandbox.Spec) (*sandbox.Result, error) {
	f.calls <- struct{}{}
	return nil, &sandbox.SetupError{Step: "mount /proc", Err: context.DeadlineExceeded}
}

func TestInfrastructureFailureRetriesThenDeadLetters(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	fr := &failingRunner{calls: make(chan struct{}, 10)}
	startWorker(t, b, "w1", workerOpts{runner: fr, maxDeliver: 3})
	publish(t, b.JS, execTask("infra", "t1", "true"))
	r := collect(t, b.JS, "infra", 1, time.Minute)["t1"]
	require.Equal(t, messages.StatusInfraError, r.Status)
	require.Equal(t, messages.CodeSandboxSetup, r.Error.Code)
	require.Equal(t, 3, r.Delivery)
	require.Len(t, fr.calls, 3, "tried once per allowed delivery")
	dlq, err := b.JS.Stream(context.Background(), messages.StreamDLQ)
	require.NoError(t, err)
	_, err = dlq.GetLastMsgForSubject(context.Background(), messages.DLQSubject("infra", "infra", 1, "t1"))
	require.NoError(t, err)
}

func TestRedeliveryWithStoredResultDoesNotRunAgain(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	stored := messages.Result{V: messages.Version, TaskID: "t1", Batch: "dup", Attempt: 1, Status: messages.StatusOK, Host: "earlier"}
	data, err := json.Marshal(stored)
	require.NoError(t, err)
	_, err = b.JS.Publish(context.Background(), messages.ResultSubject("dup", 1, "t1"), data)
	require.NoError(t, err)
	counting := &countingRunner{inner: insecureRunner(t)}
	w := startWorker(t, b, "w1", workerOpts{runner: counting})
	publish(t, b.JS, execTask("dup", "t1", "true"), execTask("dup", "t2", "true"))
	got := collect(t, b.JS, "dup", 2, time.Minute)
	require.Equal(t, "earlier", got["t1"].Host)
	require.EqualValues(t, 1, counting.calls.Load(), "only t2 ran")
	require.Eventually(t, func() bool {
		cons, err := b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName("default", "default"))
		if err != nil {
			return false
		}
		ci, err := cons.Info(context.Background())
		return err == nil && ci.NumAckPending == 0 && ci.NumPending == 0
	}, 10*time.Second, 20*time.Millisecond)
	_ = w
}

func TestCancelRunningAndQueuedTasks(t *testing.T) {
	for _, tc := range []struct {
		name, batch, cancelID string
	}{
		{"whole attempt", "cx", ""},
		{"whole attempt of a tenant batch", "alice.cx", ""},
		{"one task of a tenant batch", "alice.cy", "running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t, brokertest.Options{})
			if tenant := messages.BatchTenant(tc.batch); tenant != "" {
				_, err := broker.SetupTenants(context.Background(), b.JS, broker.StreamConfig{}, []broker.Tenant{{Name: tenant}}, false)
				require.NoError(t, err)
			}
			counting := &countingRunner{inner: insecureRunner(t)}
			started := make(chan string, 4)
			startWorker(t, b, "w1", workerOpts{capacity: 1, runner: counting, started: started})
			publish(t, b.JS, shTask(tc.batch, "running", "sleep 60"), shTask(tc.batch, "queued", "echo should-not-run"))
			select {
			case id := <-started:
				require.Equal(t, "running", id)
			case <-time.After(30 * time.Second):
				t.Fatal("task did not start")
			}
			kv, err := b.JS.KeyValue(context.Background(), messages.NamespaceOf(tc.batch).Cancel())
			require.NoError(t, err)
			_, err = kv.Put(context.Background(), messages.CancelKey(tc.batch, 1, tc.cancelID), []byte(`{"reason":"test"}`))
			require.NoError(t, err)
			got := collect(t, b.JS, tc.batch, 2, 30*time.Second)
			require.Equal(t, messages.StatusCancelled, got["running"].Status)
			require.Less(t, got["running"].WallMS, int64(30_000), "the sandbox was killed, not waited for")
			if tc.cancelID == "" {
				require.Equal(t, messages.StatusCancelled, got["queued"].Status)
				require.EqualValues(t, 1, counting.calls.Load(), "the queued task never ran")
			} else {
				require.Equal(t, messages.StatusOK, got["queued"].Status, "only the named task is cancelled")
			}
		})
	}
}

func TestDrainLetsRunningTasksFinish(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	started := make(chan string, 4)
	w := startWorker(t, b, "w1", workerOpts{capacity: 2, started: started})
	publish(t, b.JS, shTask("drain", "t1", "sleep 1; echo done"))
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.Stop(ctx))
	require.NoError(t, w.Stop(ctx), "Stop is idempotent")
	r := collect(t, b.JS, "drain", 1, 5*time.Second)["t1"]
	require.Equal(t, messages.StatusOK, r.Status)
	require.Equal(t, "done\n", string(r.Stdout))
}

func TestHostRegistryEntry(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "host-a", workerOpts{capacity: 3})
	kv, err := b.JS.KeyValue(context.Background(), messages.BucketHosts)
	require.NoError(t, err)
	var info messages.HostInfo
	require.Eventually(t, func() bool {
		e, err := kv.Get(context.Background(), "default.host-a")
		return err == nil && json.Unmarshal(e.Value(), &info) == nil
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 3, info.Capacity)
	require.Equal(t, "default", info.Pool)
	require.Contains(t, info.Profiles, "default")
}

var _ = jetstream.ErrNoMessages
