package scheduler_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// scriptedWorker takes the next task from the default pool over real NATS
// and runs play with it: emit sends a live event, store stores a result.
func (x *bundle) scriptedWorker(t *testing.T, play func(task *messages.Task, emit func(messages.Event), store func(messages.Result))) <-chan struct{} {
	t.Helper()
	cons, err := broker.EnsureConsumer(x.ctx, x.b.JS, messages.DefaultPool, messages.DefaultProfile, broker.ConsumerConfig{})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		msg, err := cons.Next(x.ctxFetch())
		if err != nil {
			return
		}
		task, err := messages.DecodeTask(msg.Data())
		if err != nil {
			return
		}
		_ = msg.Ack()
		emit := func(ev messages.Event) {
			ev.V, ev.TaskID, ev.Batch, ev.Attempt = messages.Version, task.ID, task.Batch, task.EffectiveAttempt()
			data, _ := json.Marshal(&ev)
			_ = x.b.Conn.Publish(task.EffectiveReply(), data)
		}
		store := func(r messages.Result) {
			r.V, r.TaskID, r.Batch, r.Attempt = messages.Version, task.ID, task.Batch, task.EffectiveAttempt()
			data, _ := json.Marshal(&r)
			_, _ = x.b.JS.Publish(x.ctx, messages.ResultSubject(task.Batch, task.EffectiveAttempt(), task.ID), data)
		}
		play(task, emit, store)
	}()
	return done
}

func finalExit(seq uint64, code int) messages.Event {
	e := ev(1, seq, messages.EventExit, "")
	e.Final, e.ExitCode, e.Status = true, &code, messages.StatusFailed
	return e
}

// TestExecReadsTheResultItsFinalEventAnnounces: Exec gets its result
// without a consumer on WARREN_RESULTS when the final event comes (one
// direct get); it watches for it when the final event does not come
// within ResultWatch, or when the read finds nothing (a replica behind),
// so neither a lost event nor a late store loses the result.
func TestExecReadsTheResultItsFinalEventAnnounces(t *testing.T) {
	result := messages.Result{Delivery: 1, Status: messages.StatusFailed, ExitCode: 3, Events: 2, Stdout: messages.Bytes("hi\n")}
	tests := []struct {
		name        string
		resultWatch time.Duration
		play        func(x *bundle, gets *spy) func(*messages.Task, func(messages.Event), func(messages.Result))
		consumers   int
	}{
		{
			name:        "final event after the store: read, no consumer",
			resultWatch: time.Hour,
			play: func(*bundle, *spy) func(*messages.Task, func(messages.Event), func(messages.Result)) {
				return func(_ *messages.Task, emit func(messages.Event), store func(messages.Result)) {
					emit(ev(1, 1, messages.EventStarted, ""))
					emit(ev(1, 2, messages.EventStdout, "hi\n"))
					store(result)
					emit(finalExit(3, 3))
				}
			},
		},
		{
			name:        "final event lost: watched after ResultWatch",
			resultWatch: 50 * time.Millisecond,
			play: func(*bundle, *spy) func(*messages.Task, func(messages.Event), func(messages.Result)) {
				return func(_ *messages.Task, emit func(messages.Event), store func(messages.Result)) {
					emit(ev(1, 1, messages.EventStarted, ""))
					emit(ev(1, 2, messages.EventStdout, "hi\n"))
					store(result)
				}
			},
			consumers: 1,
		},
		{
			name:        "the read finds nothing: watched at once",
			resultWatch: time.Hour,
			play: func(x *bundle, gets *spy) func(*messages.Task, func(messages.Event), func(messages.Result)) {
				return func(_ *messages.Task, emit func(messages.Event), store func(messages.Result)) {
					emit(ev(1, 1, messages.EventStarted, ""))
					emit(ev(1, 2, messages.EventStdout, "hi\n"))
					emit(finalExit(3, 3))
					gets.subjects(t, 1) // Exec read, and found nothing
					store(result)
				}
			},
			consumers: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := setup(t)
			creates := apiSpy(t, x.b.URL, "$JS.API.CONSUMER.CREATE."+messages.StreamResults+".>")
			gets := apiSpy(t, x.b.URL, "$JS.API.DIRECT.GET."+messages.StreamResults+".>")
			c, err := scheduler.New(x.b.Conn, scheduler.Config{ResultWatch: tt.resultWatch, EventGrace: time.Hour})
			require.NoError(t, err)
			done := x.scriptedWorker(t, tt.play(x, gets))
			ctx, cancel := context.WithTimeout(x.ctx, 20*time.Second)
			defer cancel()
			var stdout, stderr syncbuf.Buffer
			res, err := c.Exec(ctx, messages.Task{Argv: []string{"echo", "hi"}}, &stdout, &stderr)
			require.NoError(t, err)
			<-done
			require.Equal(t, messages.StatusFailed, res.Status)
			require.Equal(t, 3, res.ExitCode)
			require.Equal(t, "hi\n", stdout.String())
			require.Empty(t, stderr.String())
			creates.drain(t)
			require.Len(t, creates.seen, tt.consumers, "result consumers created: %s", strings.Join(creates.seen, " "))
		})
	}
}

// TestExecTakesTheResultItsFinalEventCarries: a final event carrying the
// stored result of its attempt and delivery ends Exec without a read;
// one carrying any other (another task's, another delivery's, not a
// result) is not taken: the stored result is read.
func TestExecTakesTheResultItsFinalEventCarries(t *testing.T) {
	stored := messages.Result{Delivery: 1, Status: messages.StatusFailed, ExitCode: 3, Events: 2, Stdout: messages.Bytes("hi\n")}
	tests := []struct {
		name    string
		carry   func(task *messages.Task) []byte
		reads   int
		exit    int
		stdoutR string // the returned result's Stdout
	}{
		{"its own result: taken, no read", func(task *messages.Task) []byte {
			r := stored
			r.V, r.TaskID, r.Batch, r.Attempt, r.ExitCode = messages.Version, task.ID, task.Batch, task.EffectiveAttempt(), 4
			b, _ := json.Marshal(&r)
			return b
		}, 0, 4, "hi\n"},
		{"another task's: read", func(task *messages.Task) []byte {
			r := stored
			r.V, r.TaskID, r.Batch, r.Attempt, r.ExitCode = messages.Version, "other", task.Batch, task.EffectiveAttempt(), 4
			b, _ := json.Marshal(&r)
			return b
		}, 1, 3, "hi\n"},
		{"another delivery's: read", func(task *messages.Task) []byte {
			r := stored
			r.V, r.TaskID, r.Batch, r.Attempt, r.Delivery, r.ExitCode = messages.Version, task.ID, task.Batch, task.EffectiveAttempt(), 2, 4
			b, _ := json.Marshal(&r)
			return b
		}, 1, 3, "hi\n"},
		{"not a result: read", func(*messages.Task) []byte { return []byte(`"nonsense"`) }, 1, 3, "hi\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := setup(t)
			gets := apiSpy(t, x.b.URL, "$JS.API.DIRECT.GET."+messages.StreamResults+".>")
			c, err := scheduler.New(x.b.Conn, scheduler.Config{ResultWatch: time.Hour, EventGrace: time.Hour})
			require.NoError(t, err)
			done := x.scriptedWorker(t, func(task *messages.Task, emit func(messages.Event), store func(messages.Result)) {
				emit(ev(1, 1, messages.EventStarted, ""))
				emit(ev(1, 2, messages.EventStdout, "hi\n"))
				store(stored)
				final := finalExit(3, 3)
				final.Result = tt.carry(task)
				emit(final)
			})
			ctx, cancel := context.WithTimeout(x.ctx, 20*time.Second)
			defer cancel()
			var stdout, stderr syncbuf.Buffer
			res, err := c.Exec(ctx, messages.Task{Argv: []string{"echo", "hi"}}, &stdout, &stderr)
			require.NoError(t, err)
			<-done
			require.Equal(t, tt.exit, res.ExitCode)
			require.Equal(t, tt.stdoutR, string(res.Stdout))
			require.Equal(t, "hi\n", stdout.String())
			gets.drain(t)
			require.Len(t, gets.seen, tt.reads, "direct gets: %s", strings.Join(gets.seen, " "))
		})
	}
}
