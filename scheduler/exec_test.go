package scheduler_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// fakeWorker takes the next task from the default pool over real NATS and
// plays a script: the given events on the task's reply subject, then the
// result. It is a test peer, not a broker mock.
func (x *bundle) fakeWorker(t *testing.T, events []messages.Event, result messages.Result) <-chan *messages.Task {
	t.Helper()
	got := make(chan *messages.Task, 1)
	done := x.scriptedWorker(t, func(task *messages.Task, emit func(messages.Event), store func(messages.Result)) {
		got <- task
		for _, ev := range events {
			emit(ev)
		}
		if result.Status != "" {
			store(result)
		}
	})
	go func() { <-done; close(got) }()
	return got
}

func ev(delivery int, seq uint64, typ messages.EventType, data string) messages.Event {
	return messages.Event{Delivery: delivery, Seq: seq, Type: typ, Data: messages.Bytes(data), Time: time.Now()}
}

func TestExecStreamsEventsInOrder(t *testing.T) {
	tests := []struct {
		name       string
		events     []messages.Event
		result     messages.Result
		wantStdout string
		wantStderr []string // substrings, in order
		noStderr   bool
	}{
		{
			name: "in order",
			events: []messages.Event{
				ev(1, 1, messages.EventStarted, ""), ev(1, 2, messages.EventStdout, "hello "),
				ev(1, 3, messages.EventStderr, "warn\n"), ev(1, 4, messages.EventStdout, "world\n"),
				ev(1, 5, messages.EventExit, ""),
			},
			result:     messages.Result{Delivery: 1, Status: messages.StatusFailed, ExitCode: 3, Stdout: messages.Bytes("hello world\n")},
			wantStdout: "hello world\n",
			wantStderr: []string{"warn\n"},
		},
		{
			name: "restart on another worker",
			events: []messages.Event{
				ev(1, 1, messages.EventStarted, ""), ev(1, 2, messages.EventStdout, "part"),
				ev(2, 1, messages.EventStarted, ""), ev(2, 2, messages.EventStdout, "full\n"),
				ev(1, 3, messages.EventStdout, "stale"), // the superseded delivery still talking
				ev(2, 3, messages.EventExit, ""),
			},
			result:     messages.Result{Delivery: 2, Status: messages.StatusOK},
			wantStdout: "partfull\n",
			wantStderr: []string{"warren: the task restarted (delivery 2"},
		},
		{
			name: "gap and duplicate",
			events: []messages.Event{
				ev(1, 1, messages.EventStarted, ""), ev(1, 2, messages.EventStdout, "a"),
				ev(1, 2, messages.EventStdout, "a"), ev(1, 4, messages.EventStdout, "c"),
				ev(1, 5, messages.EventExit, ""),
			},
			result:     messages.Result{Delivery: 1, Status: messages.StatusOK},
			wantStdout: "ac",
			wantStderr: []string{"warren: 1 live event(s) lost"},
		},
		{
			name:       "no live events: captured output",
			result:     messages.Result{Delivery: 1, Status: messages.StatusKilled, ExitCode: -1, Signal: "SIGKILL", Stdout: messages.Bytes("captured\n"), Stderr: messages.Bytes("oops\n")},
			wantStdout: "captured\n",
			wantStderr: []string{"warren: live output of delivery 1 ended", "oops\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := setup(t)
			c, err := scheduler.New(x.b.Conn, scheduler.Config{EventGrace: 100 * time.Millisecond})
			require.NoError(t, err)
			got := x.fakeWorker(t, tt.events, tt.result)
			var stdout, stderr syncbuf.Buffer
			res, err := c.Exec(x.ctx, messages.Task{Argv: []string{"echo", "hi"}}, &stdout, &stderr)
			require.NoError(t, err)
			task := <-got
			require.NotNil(t, task)
			require.Equal(t, []string{"echo", "hi"}, task.Argv)
			require.Equal(t, 1, task.Attempt)
			require.Equal(t, tt.result.Status, res.Status)
			require.Equal(t, tt.result.ExitCode, res.ExitCode)
			require.Equal(t, tt.result.Signal, res.Signal)
			require.Equal(t, tt.wantStdout, stdout.String())
			rest := stderr.String()
			for _, want := range tt.wantStderr {
				require.Contains(t, rest, want)
			}
		})
	}
}

func TestExecCancelledByContext(t *testing.T) {
	x := setup(t)
	got := x.fakeWorker(t, []messages.Event{ev(1, 1, messages.EventStarted, "")}, messages.Result{})
	ctx, cancel := context.WithCancel(x.ctx)
	errc := make(chan error, 1)
	var stdout, stderr syncbuf.Buffer
	go func() {
		_, err := x.c.Exec(ctx, messages.Task{Batch: "ex", ID: "one", Argv: []string{"sleep", "100"}}, &stdout, &stderr)
		errc <- err
	}()
	require.NotNil(t, <-got) // the task reached a worker
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketCancel)
	require.NoError(t, err)
	_, err = kv.Get(x.ctx, messages.CancelKey("ex", 1, "one"))
	require.NoError(t, err)
}

func TestExecRefusesInvalidTask(t *testing.T) {
	x := setup(t)
	var out syncbuf.Buffer
	_, err := x.c.Exec(x.ctx, messages.Task{Argv: []string{"a\x00b"}}, &out, &out)
	require.ErrorIs(t, err, messages.ErrNULByte)
}

// A BeforePublish gate that refuses ends Exec with its error, nothing
// published and no manifest left; one that agrees lets the task run. The
// manifest is written while the gate runs (the agreeing gate waits until
// it is there: written after the gate, it never would be). The control:
// the same batch's other task, published without the refusal, reaches
// the worker (the refused task's manifest, left over, would be a batch
// conflict).
func TestExecBeforePublishGate(t *testing.T) {
	x := setup(t)
	batches, err := x.b.JS.KeyValue(x.ctx, messages.BucketBatches)
	require.NoError(t, err)
	refused := errors.New("no worker serves default/default")
	var out syncbuf.Buffer
	_, err = x.c.Exec(x.ctx, messages.Task{Batch: "gated", ID: "one", Argv: []string{"true"}}, &out, &out,
		scheduler.BeforePublish(func(context.Context) error { return refused }))
	require.ErrorIs(t, err, refused)
	s, err := x.b.JS.Stream(x.ctx, messages.StreamTasks)
	require.NoError(t, err)
	info, err := s.Info(x.ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "nothing published")
	_, err = batches.Get(x.ctx, "gated")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "the refused exec's manifest was left")

	got := x.fakeWorker(t, nil, messages.Result{Status: messages.StatusOK})
	var sawManifest atomic.Bool
	res, err := x.c.Exec(x.ctx, messages.Task{Batch: "gated", ID: "two", Argv: []string{"true"}}, &out, &out,
		scheduler.BeforePublish(func(ctx context.Context) error {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := batches.Get(ctx, "gated"); err == nil {
					sawManifest.Store(true)
					break
				}
			}
			return nil
		}))
	require.NoError(t, err)
	require.True(t, sawManifest.Load(), "the manifest was not written while the gate ran")
	require.Equal(t, messages.StatusOK, res.Status)
	require.Equal(t, "two", (<-got).ID)
}

// A result that says how many events its delivery sent ends Exec once
// those are here: the exit event, sent after the result is stored, is not
// waited for. One that says more than arrived still waits (the grace).
func TestExecEndsWithTheResultWhenItsOutputIsHere(t *testing.T) {
	tests := []struct {
		name       string
		events     []messages.Event
		result     messages.Result
		grace      time.Duration
		wantLost   bool
		wantStdout string
	}{
		{
			name:       "all events here, no exit",
			events:     []messages.Event{ev(1, 1, messages.EventStarted, ""), ev(1, 2, messages.EventStdout, "hi\n")},
			result:     messages.Result{Delivery: 1, Status: messages.StatusOK, Events: 2, Stdout: messages.Bytes("hi\n")},
			grace:      time.Hour, // waiting for the exit would outlive the test's deadline
			wantStdout: "hi\n",
		},
		{
			name:       "an event still missing",
			events:     []messages.Event{ev(1, 1, messages.EventStarted, ""), ev(1, 2, messages.EventStdout, "hi\n")},
			result:     messages.Result{Delivery: 1, Status: messages.StatusOK, Events: 3, Stdout: messages.Bytes("hi\nmore\n")},
			grace:      100 * time.Millisecond,
			wantLost:   true,
			wantStdout: "hi\n",
		},
		{
			name:       "another delivery's events",
			events:     []messages.Event{ev(1, 1, messages.EventStarted, ""), ev(1, 2, messages.EventStdout, "part")},
			result:     messages.Result{Delivery: 2, Status: messages.StatusOK, Events: 2, Stdout: messages.Bytes("full\n")},
			grace:      100 * time.Millisecond,
			wantLost:   true,
			wantStdout: "partfull\n", // none of delivery 2's output streamed: the result's
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := setup(t)
			c, err := scheduler.New(x.b.Conn, scheduler.Config{EventGrace: tt.grace})
			require.NoError(t, err)
			got := x.fakeWorker(t, tt.events, tt.result)
			ctx, cancel := context.WithTimeout(x.ctx, 20*time.Second)
			defer cancel()
			var stdout, stderr syncbuf.Buffer
			res, err := c.Exec(ctx, messages.Task{Argv: []string{"echo", "hi"}}, &stdout, &stderr)
			require.NoError(t, err)
			require.NotNil(t, <-got)
			require.Equal(t, tt.result.Status, res.Status)
			require.Equal(t, tt.wantStdout, stdout.String())
			if tt.wantLost {
				require.Contains(t, stderr.String(), "ended without its exit event")
			} else {
				require.Empty(t, stderr.String())
			}
		})
	}
}
