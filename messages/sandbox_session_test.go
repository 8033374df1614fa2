package messages_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

const sbxID = "h1.0123456789abcdef"

func TestSandboxSubjects(t *testing.T) {
	s := messages.SandboxSubject("default", "host.a:1", "", messages.SbxExec)
	require.Equal(t, "warren.sbx.default.host_a_1._.exec", s)
	pool, host, tenant, op, ok := messages.ParseSandboxSubject(s)
	require.True(t, ok)
	require.Equal(t, []string{"default", "host_a_1", "", "exec"}, []string{pool, host, tenant, string(op)})
	_, _, tenant, _, ok = messages.ParseSandboxSubject(messages.SandboxSubject("p", "h", "alice", messages.SbxDelete))
	require.True(t, ok)
	require.Equal(t, "alice", tenant)
	for _, bad := range []string{"warren.sbx.p.h._.nope", "warren.sbx.p.h.exec", "warren.tasks.p.h._.exec"} {
		_, _, _, _, ok := messages.ParseSandboxSubject(bad)
		require.False(t, ok, bad)
	}
	require.Equal(t, "warren.sbx.p.h.*.*", messages.SandboxHostFilter("p", "h"))
}

func TestParseSandboxID(t *testing.T) {
	host, local, err := messages.ParseSandboxID(sbxID)
	require.NoError(t, err)
	require.Equal(t, "h1", host)
	require.Equal(t, "0123456789abcdef", local)
	for _, bad := range []string{"", "h1", "h1.0123", "h1.0123456789ABCDEF", "a.b.0123456789abcdef", ".0123456789abcdef"} {
		_, _, err := messages.ParseSandboxID(bad)
		require.ErrorIs(t, err, messages.ErrInvalidField, bad)
	}
}

func TestSandboxRequestValidation(t *testing.T) {
	tests := []struct {
		name  string
		op    messages.SandboxOp
		body  string
		code  messages.Code
		field string
	}{
		{"create", messages.SbxCreate, `{"v":1,"create":{"idle_ms":1000,"env":{"A":"b"}}}`, "", ""},
		{"create empty", messages.SbxCreate, `{"v":1}`, "", ""},
		{"exec", messages.SbxExec, `{"v":1,"id":"` + sbxID + `","token":"x","exec":{"argv":["true"],"reply":"_INBOX.a"}}`, "", ""},
		{"list home", messages.SbxList, `{"v":1,"id":"` + sbxID + `","token":"x"}`, "", ""},
		{"version", messages.SbxCreate, `{"v":2}`, messages.CodeVersion, "v"},
		{"unknown field", messages.SbxCreate, `{"v":1,"nope":1}`, messages.CodeMalformed, ""},
		{"bad network", messages.SbxCreate, `{"v":1,"create":{"network":"host"}}`, messages.CodeInvalidField, "create.network"},
		{"negative ttl", messages.SbxCreate, `{"v":1,"create":{"ttl_ms":-1}}`, messages.CodeInvalidField, "create.ttl_ms"},
		{"bad env", messages.SbxCreate, `{"v":1,"create":{"env":{"1A":"b"}}}`, messages.CodeInvalidField, "create.env.1A"},
		{"reserved env", messages.SbxCreate, `{"v":1,"create":{"env":{"HOME":"/"}}}`, messages.CodeInvalidField, "create.env.HOME"},
		{"no id", messages.SbxExec, `{"v":1,"token":"x","exec":{"argv":["true"]}}`, messages.CodeMissingField, "id"},
		{"bad id", messages.SbxExec, `{"v":1,"id":"x","token":"x","exec":{"argv":["true"]}}`, messages.CodeInvalidField, "id"},
		{"no token", messages.SbxStatus, `{"v":1,"id":"` + sbxID + `"}`, messages.CodeMissingField, "token"},
		{"no exec", messages.SbxExec, `{"v":1,"id":"` + sbxID + `","token":"x"}`, messages.CodeMissingField, "exec"},
		{"wrong section", messages.SbxPs, `{"v":1,"id":"` + sbxID + `","token":"x","file":{"path":"a"}}`, messages.CodeContradictory, "file"},
		{"empty argv0", messages.SbxExec, `{"v":1,"id":"` + sbxID + `","token":"x","exec":{"argv":[""],"reply":"_INBOX.a"}}`, messages.CodeInvalidField, "exec.argv[0]"},
		{"nul arg", messages.SbxExec, `{"v":1,"id":"` + sbxID + `","token":"x","exec":{"argv":["a","b\u0000"],"reply":"_INBOX.a"}}`, messages.CodeNULByte, "exec.argv[1]"},
		{"no reply", messages.SbxExec, `{"v":1,"id":"` + sbxID + `","token":"x","exec":{"argv":["a"]}}`, messages.CodeMissingField, "exec.reply"},
		{"background", messages.SbxExec, `{"v":1,"id":"` + sbxID + `","token":"x","exec":{"argv":["a"],"background":true}}`, "", ""},
		{"bad signal", messages.SbxKill, `{"v":1,"id":"` + sbxID + `","token":"x","kill":{"pid":3,"signal":"SIGSTOP"}}`, messages.CodeInvalidField, "kill.signal"},
		{"bad pid", messages.SbxKill, `{"v":1,"id":"` + sbxID + `","token":"x","kill":{"pid":0}}`, messages.CodeInvalidField, "kill.pid"},
		{"read no path", messages.SbxRead, `{"v":1,"id":"` + sbxID + `","token":"x","file":{}}`, messages.CodeMissingField, "file.path"},
		{"read too long", messages.SbxRead, `{"v":1,"id":"` + sbxID + `","token":"x","file":{"path":"a","length":2000000}}`, messages.CodeInvalidField, "file.length"},
		{"data on read", messages.SbxRead, `{"v":1,"id":"` + sbxID + `","token":"x","file":{"path":"a","data":"AA=="}}`, messages.CodeContradictory, "file.data"},
		{"bad mode", messages.SbxWrite, `{"v":1,"id":"` + sbxID + `","token":"x","file":{"path":"a","mode":4096}}`, messages.CodeInvalidField, "file.mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := messages.DecodeSandboxRequest(tc.op, []byte(tc.body))
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			var me *messages.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, tc.code, me.Code, me.Error())
			require.Equal(t, tc.field, me.Field, me.Error())
		})
	}
}

// A session error survives the reply's JSON round trip for errors.Is.
func TestSandboxErrorsSurviveJSON(t *testing.T) {
	for _, sentinel := range []error{messages.ErrNoCapacity, messages.ErrSandboxGone, messages.ErrTokenInvalid,
		messages.ErrTokenExpired, messages.ErrDraining, messages.ErrNotFound, messages.ErrFileRefused, messages.ErrQuotaExceeded,
		messages.ErrDiskFull} {
		b, err := json.Marshal(messages.SandboxReply{V: 1, Error: &messages.Error{Code: sentinel.(*messages.Error).Code, Msg: "x"}})
		require.NoError(t, err)
		_, err = messages.DecodeSandboxReply(b)
		require.ErrorIs(t, err, sentinel)
		require.False(t, errors.Is(err, messages.ErrMalformed))
	}
}

func TestCheckSandboxReply(t *testing.T) {
	inbox := messages.DefaultInboxPrefixes
	require.NoError(t, messages.CheckSandboxReply("_INBOX.abc", "", inbox))
	require.NoError(t, messages.CheckSandboxReply("_WINBOX.alice.x", "alice", inbox))
	for _, bad := range []string{"_INBOX.", "_WINBOX.alice.x", "warren.events.a.b", "$JS.API.x", "warren.sbx.p.h._.exec", "warren.results.a.1.b", "a.*"} {
		require.ErrorIs(t, messages.CheckSandboxReply(bad, "", inbox), messages.ErrReplyForbidden, bad)
	}
	require.ErrorIs(t, messages.CheckSandboxReply("_WINBOX.bob.x", "alice", inbox), messages.ErrReplyForbidden)
}
