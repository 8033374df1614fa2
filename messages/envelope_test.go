package messages_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func TestCheckEnvelope(t *testing.T) {
	task := validTask()
	task.Attempt = 2
	ok := messages.TaskSubject("default", "default", "b1")
	cases := []struct {
		name    string
		subject string
		header  map[string][]string
		code    messages.Code
		field   string
	}{
		{name: "no headers", subject: ok},
		{name: "agreeing headers", subject: ok, header: map[string][]string{
			messages.HeaderTaskID: {"t1"}, messages.HeaderBatch: {"b1"}, messages.HeaderAttempt: {"2"}}},
		{name: "id header", subject: ok, header: map[string][]string{messages.HeaderTaskID: {"t2"}}, code: messages.CodeContradictory, field: "id"},
		{name: "batch header", subject: ok, header: map[string][]string{messages.HeaderBatch: {"b2"}}, code: messages.CodeContradictory, field: "batch"},
		{name: "attempt header", subject: ok, header: map[string][]string{messages.HeaderAttempt: {"1"}}, code: messages.CodeContradictory, field: "attempt"},
		{name: "subject batch", subject: messages.TaskSubject("default", "default", "b2"), code: messages.CodeContradictory, field: "batch"},
		{name: "subject pool", subject: messages.TaskSubject("gpu", "default", "b1"), code: messages.CodeContradictory, field: "pool"},
		{name: "subject profile", subject: messages.TaskSubject("default", "coq", "b1"), code: messages.CodeContradictory, field: "profile"},
		{name: "not a task subject", subject: "warren.tasks.default.b1", code: messages.CodeInvalidField},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := messages.CheckEnvelope(&task, c.subject, c.header)
			if c.code == "" {
				require.NoError(t, err)
				return
			}
			var me *messages.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, c.code, me.Code, me.Error())
			require.Equal(t, c.field, me.Field)
		})
	}
}

func TestPeekTask(t *testing.T) {
	cases := []struct {
		name string
		body string
		ok   bool
		want messages.TaskIdentity
	}{
		{"valid ids, bad kind, own reply", `{"v":1,"id":"a","batch":"b","attempt":3,"kind":"x","reply":"my.inbox"}`, true,
			messages.TaskIdentity{ID: "a", Batch: "b", Attempt: 3, Reply: "my.inbox"}},
		{"no attempt reads as 1", `{"id":"a","batch":"b"}`, true,
			messages.TaskIdentity{ID: "a", Batch: "b", Attempt: 1, Reply: messages.EventSubject("b", "a")}},
		{"refused reply: the default subject", `{"id":"a","batch":"b","reply":"x.*"}`, true,
			messages.TaskIdentity{ID: "a", Batch: "b", Attempt: 1, Reply: messages.EventSubject("b", "a")}},
		{"wrong type elsewhere", `{"id":"a","batch":"b","argv":7}`, true,
			messages.TaskIdentity{ID: "a", Batch: "b", Attempt: 1, Reply: messages.EventSubject("b", "a")}},
		{"truncated", `{"id":"a","batch":`, false, messages.TaskIdentity{}},
		{"bad id", `{"id":"a.b","batch":"b"}`, false, messages.TaskIdentity{}},
		{"negative attempt", `{"id":"a","batch":"b","attempt":-1}`, false, messages.TaskIdentity{}},
		{"not an object", `[1]`, false, messages.TaskIdentity{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := messages.PeekTask([]byte(c.body))
			require.Equal(t, c.ok, ok)
			require.Equal(t, c.want, got)
		})
	}
}

// FuzzPeekTask: whatever the body, a peeked identity is usable: ids that
// are subject tokens, an attempt of at least 1, and a reply a valid task
// could carry.
func FuzzPeekTask(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"a","batch":"b","attempt":3,"reply":"my.inbox"}`))
	f.Add([]byte(`{"id":"a","batch":"b","reply":"x.>"}`))
	f.Add([]byte(`{"id":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ident, ok := messages.PeekTask(data)
		if !ok {
			return
		}
		require.True(t, messages.ValidID(ident.ID))
		require.True(t, messages.ValidID(ident.Batch))
		require.GreaterOrEqual(t, ident.Attempt, 1)
		probe := messages.Task{V: messages.Version, ID: ident.ID, Batch: ident.Batch, Kind: messages.KindExec, Argv: []string{"x"}, Reply: ident.Reply}
		require.NoError(t, probe.Validate(), "reply %q", ident.Reply)
		_, err := json.Marshal(ident)
		require.NoError(t, err)
	})
}
