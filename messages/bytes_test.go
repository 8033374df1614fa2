package messages_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func TestBytesWireForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   messages.Bytes
		wire string
	}{
		{name: "text stays a string", in: messages.Bytes("echo hi\n"), wire: `"echo hi\n"`},
		{name: "unicode text", in: messages.Bytes("λ → ∀"), wire: `"λ → ∀"`},
		{name: "binary is base64", in: messages.Bytes{0x7f, 'E', 'L', 'F', 0xff, 0x00}, wire: `{"base64":"f0VMRv8A"}`},
		{name: "empty", in: messages.Bytes{}, wire: `""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := json.Marshal(tc.in)
			require.NoError(t, err)
			require.JSONEq(t, tc.wire, string(out))
			var back messages.Bytes
			require.NoError(t, json.Unmarshal(out, &back))
			require.Equal(t, []byte(tc.in), []byte(back), "round trip")
		})
	}
}

func TestBytesRefusesOtherShapes(t *testing.T) {
	t.Parallel()
	for _, wire := range []string{`{}`, `{"base64":"!!"}`, `{"base64":"QQ==","x":1}`, `42`, `["a"]`} {
		var b messages.Bytes
		require.Error(t, json.Unmarshal([]byte(wire), &b), wire)
	}
}

// TestTaskCarriesBinaryStdinAndFiles: random bytes in stdin and a file
// survive the task's JSON unchanged (a string field would replace every
// invalid UTF-8 byte with U+FFFD).
func TestTaskCarriesBinaryStdinAndFiles(t *testing.T) {
	t.Parallel()
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(i*7919 + i>>3)
	}
	task := messages.Task{V: 1, ID: "t", Batch: "b", Kind: messages.KindExec, Argv: []string{"cat"},
		Stdin: bin, Files: map[string]messages.Bytes{"tool": bin, "note.txt": messages.Bytes("text\n")}}
	data, err := json.Marshal(task)
	require.NoError(t, err)
	got, err := messages.DecodeTask(data)
	require.NoError(t, err)
	require.Equal(t, bin, []byte(got.Stdin))
	require.Equal(t, bin, []byte(got.Files["tool"]))
	require.Equal(t, "text\n", string(got.Files["note.txt"]))
	require.Contains(t, string(data), `"note.txt":"text\n"`, "text files stay readable on the wire")

	// The control: the same bytes as a JSON string are altered.
	s, err := json.Marshal(string(bin))
	require.NoError(t, err)
	var back string
	require.NoError(t, json.Unmarshal(s, &back))
	require.NotEqual(t, string(bin), back)
}

// TestTaskRefusesInvalidUTF8Fields: a string field with bytes JSON cannot
// carry is refused by its path, before json.Marshal would replace them.
func TestTaskRefusesInvalidUTF8Fields(t *testing.T) {
	t.Parallel()
	bad := "a\xffb"
	for _, tc := range []struct {
		field string
		mut   func(*messages.Task)
	}{
		{"argv[1]", func(t *messages.Task) { t.Argv = []string{"echo", bad} }},
		{"env.NAME", func(t *messages.Task) { t.Env = map[string]string{"NAME": bad} }},
		{"cwd", func(t *messages.Task) { t.Cwd = bad }},
		{"files", func(t *messages.Task) { t.Files = map[string]messages.Bytes{bad: nil} }},
		{"outputs[0]", func(t *messages.Task) { t.Outputs = []string{bad} }},
	} {
		task := messages.Task{V: 1, ID: "t", Batch: "b", Kind: messages.KindExec, Argv: []string{"true"}}
		tc.mut(&task)
		err := task.Validate()
		var me *messages.Error
		require.ErrorAs(t, err, &me, tc.field)
		require.Equal(t, messages.CodeInvalidUTF8, me.Code, tc.field)
		require.Equal(t, tc.field, me.Field)
	}
	ok := messages.Task{V: 1, ID: "t", Batch: "b", Kind: messages.KindExec, Argv: []string{"echo", "λ"}, Stdin: messages.Bytes(bad)}
	require.NoError(t, ok.Validate(), "stdin takes any bytes")
}
