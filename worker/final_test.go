package worker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// requireEnding checks a task's events end with an error event carrying
// code and then a final exit with status, and that nothing before is final.
func requireEnding(t *testing.T, evs []*messages.Event, code messages.Code, status messages.Status) {
	t.Helper()
	require.GreaterOrEqual(t, len(evs), 2)
	errEv, exit := evs[len(evs)-2], evs[len(evs)-1]
	require.Equal(t, messages.EventError, errEv.Type)
	require.NotNil(t, errEv.Error)
	require.Equal(t, code, errEv.Error.Code)
	require.False(t, errEv.Final, "an error event is never final")
	require.Equal(t, messages.EventExit, exit.Type)
	require.True(t, exit.Final)
	require.Equal(t, status, exit.Status)
	require.NotNil(t, exit.ExitCode)
	require.Equal(t, -1, *exit.ExitCode)
	for _, e := range evs[:len(evs)-1] {
		require.False(t, e.Final)
	}
}

// An invalid task is answered where its client listens: the body's reply
// subject when the body names it (and it is valid), the default event
// subject otherwise; its result is filed under the body's id and attempt
// when the headers are missing; headers or a subject that disagree with
// the body are refused.
func TestInvalidTaskAnswersItsClient(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	counting := &countingRunner{inner: insecureRunner(t)}
	startWorker(t, b, "w1", workerOpts{runner: counting})
	body := func(mut func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "id": "x", "batch": "fin", "kind": "exec", "argv": []string{"true"}}
		mut(m)
		data, err := json.Marshal(m)
		require.NoError(t, err)
		return data
	}
	onDefault := messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, "fin")
	cases := []struct {
		name    string
		subject string
		data    []byte
		headers map[string]string
		listen  string // where the events must come
		batch   string // the result's batch: the subject's ("fin" when empty)
		id      string // the result's id ("seq-<stream sequence>" when empty)
		attempt int
		code    messages.Code
		field   string
	}{
		{name: "reply from the body, ids from the body", subject: onDefault,
			data: body(func(m map[string]any) {
				m["id"], m["attempt"], m["kind"], m["reply"] = "nohdr", 3, "bogus", "_INBOX.nohdr"
			}),
			listen: "_INBOX.nohdr", id: "nohdr", attempt: 3, code: messages.CodeUnknownKind, field: "kind"},
		{name: "reply the reply rule refuses: default subject", subject: onDefault,
			data: body(func(m map[string]any) {
				m["id"], m["kind"], m["reply"] = "hostile", "bogus", messages.ResultSubject("V", 1, "v1")
			}),
			listen: messages.EventSubject("fin", "hostile"), id: "hostile", attempt: 1, code: messages.CodeUnknownKind, field: "kind"},
		{name: "undecodable body: headers name it", subject: onDefault,
			data:    []byte(`{"v":1,"id":`),
			headers: map[string]string{messages.HeaderTaskID: "garbled", messages.HeaderAttempt: "2"},
			listen:  messages.EventSubject("fin", "garbled"), id: "garbled", attempt: 2, code: messages.CodeMalformed},
		{name: "refused reply: default subject", subject: onDefault,
			data:   body(func(m map[string]any) { m["id"], m["reply"] = "badreply", "a.>" }),
			listen: messages.EventSubject("fin", "badreply"), id: "badreply", attempt: 1, code: messages.CodeInvalidField, field: "reply"},
		{name: "header id disagrees", subject: onDefault,
			data:    body(func(m map[string]any) { m["id"] = "hdrid" }),
			headers: map[string]string{messages.HeaderTaskID: "other"},
			listen:  messages.EventSubject("fin", "hdrid"), id: "hdrid", attempt: 1, code: messages.CodeContradictory, field: "id"},
		{name: "header attempt disagrees", subject: onDefault,
			data:    body(func(m map[string]any) { m["id"], m["attempt"] = "hdratt", 2 }),
			headers: map[string]string{messages.HeaderAttempt: "1"},
			listen:  messages.EventSubject("fin", "hdratt"), id: "hdratt", attempt: 2, code: messages.CodeContradictory, field: "attempt"},
		// Answered in the batch the subject names, never the body's: the
		// body's id and reply belong to another batch, so neither is used.
		{name: "subject batch disagrees", subject: messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, "elsewhere"),
			data:   body(func(m map[string]any) { m["id"], m["reply"] = "subjbatch", "_INBOX.subjbatch" }),
			listen: messages.EventSubject("elsewhere", "*"), batch: "elsewhere", attempt: 1, code: messages.CodeContradictory, field: "batch"},
		{name: "subject pool disagrees", subject: onDefault,
			data:   body(func(m map[string]any) { m["id"], m["pool"] = "subjpool", "gpu" }),
			listen: messages.EventSubject("fin", "subjpool"), id: "subjpool", attempt: 1, code: messages.CodeContradictory, field: "pool"},
	}
	logs := make([]*eventLog, len(cases))
	for i, c := range cases {
		logs[i] = subscribeSubject(t, b.Conn, c.listen)
		seq := publishMsg(t, b.JS, c.subject, c.data, c.headers)
		cases[i].batch = cmp.Or(c.batch, "fin")
		cases[i].id = cmp.Or(c.id, fmt.Sprintf("seq-%d", seq))
	}
	results, err := b.JS.Stream(context.Background(), messages.StreamResults)
	require.NoError(t, err)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := logs[i].wait(t, 30*time.Second)
			requireEnding(t, evs, c.code, messages.StatusInvalid)
			require.Equal(t, c.field, evs[len(evs)-2].Error.Field)
			for _, e := range evs {
				require.NotEqual(t, messages.EventStarted, e.Type, "an invalid task never starts")
				require.Equal(t, c.id, e.TaskID)
				require.Equal(t, c.attempt, e.Attempt)
			}
			m, err := results.GetLastMsgForSubject(context.Background(), messages.ResultSubject(c.batch, c.attempt, c.id))
			require.NoError(t, err, "the result is filed under the task's own id and attempt")
			r, err := messages.DecodeResult(m.Data)
			require.NoError(t, err)
			require.Equal(t, messages.StatusInvalid, r.Status)
			require.Equal(t, c.code, r.Error.Code)
		})
	}
	require.Zero(t, counting.calls.Load())
}

// Every way a task ends gives it exactly one final event, its last:
// an exit after a result, after giving up on infrastructure failures, and
// after a cancel before the start (which sends no started event).
func TestLastEventIsFinalOnEveryEnding(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})

	t.Run("exit after a result", func(t *testing.T) {
		startWorker(t, b, "w-ok", workerOpts{})
		l := subscribeEvents(t, b.Conn, "end-ok", "t1")
		publish(t, b.JS, shTask("end-ok", "t1", "echo hi"))
		evs := l.wait(t, 30*time.Second)
		require.Equal(t, messages.EventStarted, evs[0].Type)
		last := evs[len(evs)-1]
		require.Equal(t, messages.EventExit, last.Type)
		require.Equal(t, messages.StatusOK, last.Status)
		for _, e := range evs[:len(evs)-1] {
			require.False(t, e.Final)
		}
		// The result names the events sent before it (all the output):
		// a client holding those is done without the exit.
		res := collect(t, b.JS, "end-ok", 1, 30*time.Second)["t1"]
		require.Equal(t, evs[len(evs)-2].Seq, res.Events)
		require.Equal(t, last.Seq, res.Events+1, "only the exit follows the result")
		require.Contains(t, string(evs[len(evs)-2].Data), "hi")
	})

	t.Run("cancelled before it started", func(t *testing.T) {
		kv, err := b.JS.KeyValue(context.Background(), messages.BucketCancel)
		require.NoError(t, err)
		_, err = kv.Put(context.Background(), messages.CancelKey("end-cx", 1, ""), []byte(`{"reason":"test"}`))
		require.NoError(t, err)
		// A worker that started after the cancel knows it from the start.
		startWorker(t, b, "w-cx", workerOpts{profiles: []string{"cx"}})
		l := subscribeEvents(t, b.Conn, "end-cx", "t1")
		task := shTask("end-cx", "t1", "echo never")
		task.Profile = "cx"
		data, err := json.Marshal(task)
		require.NoError(t, err)
		publishMsg(t, b.JS, messages.TaskSubject(messages.DefaultPool, "cx", "end-cx"), data, nil)
		evs := l.wait(t, 30*time.Second)
		require.Len(t, evs, 1, "only the final exit: it never started")
		require.Equal(t, messages.EventExit, evs[0].Type)
		require.Equal(t, messages.StatusCancelled, evs[0].Status)
	})
}

func TestInfraErrorsAreNotFinalUntilGivingUp(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	fr := &failingRunner{calls: make(chan struct{}, 10)}
	startWorker(t, b, "w1", workerOpts{runner: fr, maxDeliver: 2})
	l := subscribeEvents(t, b.Conn, "end-infra", "t1")
	publish(t, b.JS, execTask("end-infra", "t1", "true"))
	evs := l.wait(t, time.Minute)
	var errs []*messages.Event
	for _, e := range evs {
		if e.Type == messages.EventError {
			errs = append(errs, e)
		}
	}
	require.Len(t, errs, 2, "one error per delivery")
	require.Equal(t, 1, errs[0].Delivery, "the first delivery's error: a retry follows")
	require.Equal(t, messages.CodeSandboxSetup, errs[0].Error.Code)
	requireEnding(t, evs, messages.CodeSandboxSetup, messages.StatusInfraError)
	require.Equal(t, 2, evs[len(evs)-1].Delivery)
}
