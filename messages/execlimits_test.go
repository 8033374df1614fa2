package messages_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func TestValidateRefusesWhatExecWouldRefuse(t *testing.T) {
	longest := strings.Repeat("a", messages.MaxArgStrlen-1) // with its NUL: exactly the limit
	tooLong := longest + "a"
	cases := []struct {
		name  string
		mut   func(*messages.Task)
		field string // empty: valid
	}{
		{"argument at the limit", func(t *messages.Task) { t.Argv = []string{"echo", longest} }, ""},
		{"argument over the limit", func(t *messages.Task) { t.Argv = []string{"echo", "a", "b", tooLong} }, "argv[3]"},
		{"program name over the limit", func(t *messages.Task) { t.Argv = []string{tooLong} }, "argv[0]"},
		{"shell at the limit", func(t *messages.Task) { t.Argv, t.Shell = nil, longest }, ""},
		{"shell over the limit", func(t *messages.Task) { t.Argv, t.Shell = nil, tooLong }, "shell"},
		{"env at the limit", func(t *messages.Task) { t.Env = map[string]string{"BIG": longest[len("BIG="):]} }, ""},
		{"env over the limit", func(t *messages.Task) { t.Env = map[string]string{"A": "x", "BIG": longest[len("BIG="):] + "a"} }, "env.BIG"},
		{"argv and env over the total", func(t *messages.Task) {
			t.Argv = []string{"echo"}
			for range 8 {
				t.Argv = append(t.Argv, longest)
			}
		}, "argv"},
		{"argv just under the total", func(t *messages.Task) {
			t.Argv = []string{"echo"}
			for range 7 {
				t.Argv = append(t.Argv, longest)
			}
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := validTask()
			c.mut(&task)
			err := task.Validate()
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			var me *messages.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, messages.CodeTooLarge, me.Code, me.Error())
			require.Equal(t, c.field, me.Field)
			require.Contains(t, me.Error(), c.field+": ", "the message names the field path")
		})
	}
}
