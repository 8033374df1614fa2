package messages_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// Input object references are checked field by field, with the full path.
func TestInputObjectsValidate(t *testing.T) {
	ref := messages.NewInputObject([]byte("content"))
	cases := []struct {
		name  string
		mut   func(*messages.Task)
		code  messages.Code
		field string
	}{
		{name: "valid stdin object", mut: func(t *messages.Task) { t.StdinObject = &ref }},
		{name: "valid file object", mut: func(t *messages.Task) { t.FilesObjects = map[string]messages.InputObject{"a/b": ref} }},
		{name: "stdin twice", mut: func(t *messages.Task) { t.Stdin, t.StdinObject = messages.Bytes("x"), &ref },
			code: messages.CodeContradictory, field: "stdin_object"},
		{name: "no name", mut: func(t *messages.Task) { r := ref; r.Name = ""; t.StdinObject = &r },
			code: messages.CodeMissingField, field: "stdin_object.name"},
		{name: "long name", mut: func(t *messages.Task) { r := ref; r.Name = strings.Repeat("n", 300); t.StdinObject = &r },
			code: messages.CodeInvalidField, field: "stdin_object.name"},
		{name: "negative size", mut: func(t *messages.Task) { r := ref; r.Size = -1; t.StdinObject = &r },
			code: messages.CodeTooLarge, field: "stdin_object.size"},
		{name: "huge size", mut: func(t *messages.Task) { r := ref; r.Size = messages.MaxInputObjectBytes + 1; t.StdinObject = &r },
			code: messages.CodeTooLarge, field: "stdin_object.size"},
		{name: "bad digest", mut: func(t *messages.Task) { r := ref; r.SHA256 = strings.ToUpper(r.SHA256); t.StdinObject = &r },
			code: messages.CodeInvalidField, field: "stdin_object.sha256"},
		{name: "file digest", mut: func(t *messages.Task) {
			r := ref
			r.SHA256 = "abc"
			t.FilesObjects = map[string]messages.InputObject{"dir/f": r}
		}, code: messages.CodeInvalidField, field: "files_objects.dir/f.sha256"},
		{name: "file traversal", mut: func(t *messages.Task) { t.FilesObjects = map[string]messages.InputObject{"../x": ref} },
			code: messages.CodePathTraversal, field: "files_objects"},
		{name: "file twice", mut: func(t *messages.Task) {
			t.Files = map[string]messages.Bytes{"a/./b": messages.Bytes("x")}
			t.FilesObjects = map[string]messages.InputObject{"a/b": ref}
		}, code: messages.CodeContradictory, field: "files_objects.a/b"},
		{name: "verify task", mut: func(t *messages.Task) {
			t.Kind, t.Argv, t.Profile = messages.KindVerify, nil, "coq"
			t.Verify = &messages.VerifySpec{Theorem: "x", Statement: "True", Proof: "exact I."}
			t.StdinObject = &ref
		}, code: messages.CodeContradictory, field: "stdin_object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := validTask()
			c.mut(&task)
			err := task.Validate()
			if c.code == "" {
				require.NoError(t, err)
				return
			}
			var me *messages.Error
			require.True(t, errors.As(err, &me), "%v", err)
			require.Equal(t, c.code, me.Code, me.Msg)
			require.Equal(t, c.field, me.Field)
		})
	}
}
