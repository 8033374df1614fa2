package messages_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// The attacks of issue 10: a task of batch W aiming its events at another
// batch's result, the task queue, the DLQ, the cancel bucket, the
// JetStream API or another batch's events.
func TestCheckReplyConfinesEventsToOwnBatchOrInbox(t *testing.T) {
	inboxes := []string{"_INBOX.", "_INBOX_team."}
	cases := []struct {
		reply string
		ok    bool
	}{
		{"", true},
		{"warren.events.W.t1", true},
		{"warren.events.W.other", true},
		{"warren.events.W.a.b", true},
		{"_INBOX.abc123", true},
		{"_INBOX.abc.def", true},
		{"_INBOX_team.x", true},
		{"warren.results.V.1.v1", false},
		{"warren.tasks.default.default.V", false},
		{"warren.dlq.invalid.V", false},
		{"$KV.warren_cancel.V.1", false},
		{"$JS.API.STREAM.DELETE.WARREN_RESULTS", false},
		{"$JS.ACK.WARREN_TASKS.x.1.1.1.1.1", false},
		{"$SYS.REQ.SERVER.PING", false},
		{"$O.bucket.x", false},
		{"warren.events.V.x", false},
		{"warren.events.WX.x", false},
		{"warren.events.W", false},
		{"_INBOX", false},
		{"_INBOX_other.x", false},
		{"foo.bar", false},
	}
	for _, c := range cases {
		t.Run(c.reply, func(t *testing.T) {
			task := validTask()
			task.Batch, task.Reply = "W", c.reply
			err := messages.CheckReply(&task, inboxes)
			if c.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, messages.ErrReplyForbidden)
			var me *messages.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, "reply", me.Field)
			// The code survives the wire.
			data, _ := json.Marshal(me)
			var back messages.Error
			require.NoError(t, json.Unmarshal(data, &back))
			require.True(t, errors.Is(&back, messages.ErrReplyForbidden))
		})
	}
}

func TestReservedSubject(t *testing.T) {
	for s, want := range map[string]bool{
		"$JS.API.INFO": true, "$KV.warren_cancel.V": true, "$O.x": true, "$SYS.x": true, "$anything": true,
		"warren.tasks.p.q.b": true, "warren.results.b.1.i": true, "warren.dlq.invalid.b": true, "warren.tasks": true,
		"warren.events.b.i": false, "_INBOX.x": false, "warren.tasksx": false,
	} {
		require.Equal(t, want, messages.ReservedSubject(s), s)
	}
}

func TestCheckInboxPrefix(t *testing.T) {
	for p, ok := range map[string]bool{
		"_INBOX.": true, "_INBOX_team.": true, "acme.inbox.": true,
		"_INBOX": false, "": false, "*.": false, "a.>.": false,
		"$JS.": false, "$": false, "$.": false, "warren.": false, "warren.events.": false, "warren.events.V.": false,
		"warren.results.": false, "warren.tasks.x.": false,
	} {
		err := messages.CheckInboxPrefix(p)
		if ok {
			require.NoError(t, err, p)
		} else {
			require.Error(t, err, p)
		}
	}
}

// Even a prefix list that CheckInboxPrefix would refuse cannot open a
// reserved namespace or another batch's events.
func TestCheckReplyRefusesReservedWhateverThePrefixes(t *testing.T) {
	bad := []string{"$", "$KV.", "warren.", "warren.events."}
	for _, r := range []string{"$KV.warren_cancel.V.1", "$JS.API.INFO", "warren.results.V.1.v1", "warren.tasks.default.default.V", "warren.events.V.x"} {
		task := validTask()
		task.Batch, task.Reply = "W", r
		require.ErrorIs(t, messages.CheckReply(&task, bad), messages.ErrReplyForbidden, r)
	}
}
