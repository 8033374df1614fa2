package messages_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func validTask() messages.Task {
	return messages.Task{V: 1, ID: "t1", Batch: "b1", Kind: messages.KindExec, Argv: []string{"echo", "hi"}}
}

func TestDecodeTaskRefusesWithStableCodes(t *testing.T) {
	cases := []struct {
		name  string
		mut   func(*messages.Task)
		raw   string
		code  messages.Code
		field string
	}{
		{name: "valid exec", mut: func(*messages.Task) {}},
		{name: "valid shell", mut: func(t *messages.Task) { t.Argv, t.Shell = nil, "echo hi" }},
		{name: "valid verify", mut: func(t *messages.Task) {
			t.Kind, t.Argv, t.Profile = messages.KindVerify, nil, "coq"
			t.Verify = &messages.VerifySpec{Theorem: "Foo.bar", Statement: "1 = 1", Proof: "reflexivity."}
		}},
		{name: "malformed", raw: `{"v":1,`, code: messages.CodeMalformed},
		{name: "trailing data", raw: `{"v":1,"id":"a","batch":"b","kind":"exec","argv":["x"]} {}`, code: messages.CodeMalformed},
		{name: "wrong type", raw: `{"v":1,"id":5}`, code: messages.CodeMalformed, field: "id"},
		{name: "unknown field", raw: `{"v":1,"id":"a","batch":"b","kind":"exec","agrv":["x"]}`, code: messages.CodeMalformed},
		{name: "bad utf8", raw: "{\"v\":1,\"id\":\"\xff\"}", code: messages.CodeInvalidUTF8, field: "id"},
		{name: "version", mut: func(t *messages.Task) { t.V = 2 }, code: messages.CodeVersion, field: "v"},
		{name: "missing id", mut: func(t *messages.Task) { t.ID = "" }, code: messages.CodeMissingField, field: "id"},
		{name: "id with dot", mut: func(t *messages.Task) { t.ID = "a.b" }, code: messages.CodeInvalidField, field: "id"},
		{name: "id wildcard", mut: func(t *messages.Task) { t.Batch = "*" }, code: messages.CodeInvalidField, field: "batch"},
		{name: "batch of three tokens", mut: func(t *messages.Task) { t.Batch = "a.b.c" }, code: messages.CodeInvalidField, field: "batch"},
		{name: "batch empty tenant", mut: func(t *messages.Task) { t.Batch = ".b" }, code: messages.CodeInvalidField, field: "batch"},
		{name: "batch tenant wildcard", mut: func(t *messages.Task) { t.Batch = "*.b" }, code: messages.CodeInvalidField, field: "batch"},
		{name: "unknown kind", mut: func(t *messages.Task) { t.Kind = "shell" }, code: messages.CodeUnknownKind, field: "kind"},
		{name: "missing kind", mut: func(t *messages.Task) { t.Kind = "" }, code: messages.CodeMissingField, field: "kind"},
		{name: "argv and shell", mut: func(t *messages.Task) { t.Shell = "x" }, code: messages.CodeContradictory, field: "argv"},
		{name: "no command", mut: func(t *messages.Task) { t.Argv = nil }, code: messages.CodeMissingField, field: "argv"},
		{name: "nul argv", mut: func(t *messages.Task) { t.Argv = []string{"a\x00"} }, code: messages.CodeNULByte, field: "argv"},
		{name: "nul shell", mut: func(t *messages.Task) { t.Argv, t.Shell = nil, "a\x00" }, code: messages.CodeNULByte, field: "shell"},
		{name: "negative memory", mut: func(t *messages.Task) { t.Limits.MemoryBytes = -1 }, code: messages.CodeInvalidField, field: "limits.memory_bytes"},
		{name: "negative disk", mut: func(t *messages.Task) { t.Limits.DiskBytes = -1 }, code: messages.CodeInvalidField, field: "limits.disk_bytes"},
		{name: "huge disk", mut: func(t *messages.Task) { t.Limits.DiskBytes = 1<<40 + 1 }, code: messages.CodeInvalidField, field: "limits.disk_bytes"},
		{name: "valid outputs", mut: func(t *messages.Task) { t.Outputs = []string{"out/*.txt", "result.json"} }},
		{name: "absolute output", mut: func(t *messages.Task) { t.Outputs = []string{"/etc/passwd"} }, code: messages.CodeInvalidField, field: "outputs[0]"},
		{name: "output escapes", mut: func(t *messages.Task) { t.Outputs = []string{"a", "x/../../y"} }, code: messages.CodeInvalidField, field: "outputs[1]"},
		{name: "bad output glob", mut: func(t *messages.Task) { t.Outputs = []string{"a["} }, code: messages.CodeInvalidField, field: "outputs[0]"},
		{name: "too many outputs", mut: func(t *messages.Task) { t.Outputs = make([]string, messages.MaxOutputPatterns+1) }, code: messages.CodeTooLarge, field: "outputs"},
		{name: "negative timeout", mut: func(t *messages.Task) { t.Limits.WallTimeoutMS = -5 }, code: messages.CodeInvalidField, field: "limits.wall_timeout_ms"},
		{name: "absurd timeout", mut: func(t *messages.Task) { t.Limits.WallTimeoutMS = 1 << 50 }, code: messages.CodeInvalidField, field: "limits.wall_timeout_ms"},
		{name: "traversal", mut: func(t *messages.Task) { t.Files = map[string]messages.Bytes{"a/../../x": nil} }, code: messages.CodePathTraversal, field: "files"},
		{name: "absolute file", mut: func(t *messages.Task) { t.Files = map[string]messages.Bytes{"/etc/passwd": nil} }, code: messages.CodePathTraversal, field: "files"},
		{name: "cwd traversal", mut: func(t *messages.Task) { t.Cwd = ".." }, code: messages.CodePathTraversal, field: "cwd"},
		{name: "reserved env", mut: func(t *messages.Task) { t.Env = map[string]string{"HOME": "/root"} }, code: messages.CodeInvalidField, field: "env"},
		{name: "bad env name", mut: func(t *messages.Task) { t.Env = map[string]string{"A=B": "x"} }, code: messages.CodeInvalidField, field: "env"},
		{name: "network", mut: func(t *messages.Task) { t.Network = "internet" }, code: messages.CodeInvalidField, field: "network"},
		{name: "isolation", mut: func(t *messages.Task) { t.Isolation = "vm" }, code: messages.CodeInvalidField, field: "isolation"},
		{name: "reply wildcard", mut: func(t *messages.Task) { t.Reply = "a.>" }, code: messages.CodeInvalidField, field: "reply"},
		{name: "reply empty token", mut: func(t *messages.Task) { t.Reply = "_INBOX..x" }, code: messages.CodeInvalidField, field: "reply"},
		{name: "pool underscore", mut: func(t *messages.Task) { t.Pool = "a_b" }, code: messages.CodeInvalidField, field: "pool"},
		{name: "verify without spec", mut: func(t *messages.Task) { t.Kind, t.Argv, t.Profile = messages.KindVerify, nil, "coq" }, code: messages.CodeMissingField, field: "verify"},
		{name: "verify without profile", mut: func(t *messages.Task) {
			t.Kind, t.Argv = messages.KindVerify, nil
			t.Verify = &messages.VerifySpec{Theorem: "x", Statement: "True", Proof: "exact I."}
		}, code: messages.CodeMissingField, field: "profile"},
		{name: "exec with verify", mut: func(t *messages.Task) {
			t.Verify = &messages.VerifySpec{Theorem: "x", Statement: "True", Proof: "exact I."}
		}, code: messages.CodeContradictory, field: "verify"},
		{name: "oversize", mut: func(t *messages.Task) { t.Stdin = messages.Bytes(strings.Repeat("x", messages.MaxTaskBytes)) }, code: messages.CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := []byte(c.raw)
			if c.mut != nil {
				task := validTask()
				c.mut(&task)
				var err error
				data, err = json.Marshal(task)
				require.NoError(t, err)
			}
			got, err := messages.DecodeTask(data)
			if c.code == "" {
				require.NoError(t, err)
				require.NotNil(t, got)
				return
			}
			require.Error(t, err)
			var me *messages.Error
			require.True(t, errors.As(err, &me))
			require.Equal(t, c.code, me.Code, me.Error())
			require.Equal(t, c.field, me.Field)
			require.NotEmpty(t, me.Msg)
			require.ErrorIs(t, err, &messages.Error{Code: c.code}, "errors.Is matches by code")
		})
	}
}

func TestErrorCodeSurvivesTheWire(t *testing.T) {
	_, err := messages.DecodeTask([]byte(`{"v":1,"id":"a","batch":"b","kind":"nope"}`))
	require.Error(t, err)
	var me *messages.Error
	require.ErrorAs(t, err, &me)
	data, jerr := json.Marshal(messages.Result{V: 1, TaskID: "a", Batch: "b", Status: messages.StatusInvalid, Error: me})
	require.NoError(t, jerr)
	r, derr := messages.DecodeResult(data)
	require.NoError(t, derr)
	require.ErrorIs(t, r.Error, messages.ErrUnknownKind)
	require.NotErrorIs(t, r.Error, messages.ErrMalformed)
}

func TestSubjectsAreDistinctPerAttempt(t *testing.T) {
	require.NotEqual(t, messages.ResultSubject("b", 1, "t"), messages.ResultSubject("b", 2, "t"))
	require.Equal(t, "warren.results.b.2.*", messages.BatchResultFilter("b", 2))
	require.Equal(t, "warren.results.b.*.*", messages.BatchResultFilter("b", 0))
	require.Equal(t, "warren.tasks.p.coq.b", messages.TaskSubject("p", "coq", "b"))
}
