package messages

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInvalidUTF8Field(t *testing.T) {
	t.Parallel()
	tests := []struct{ doc, field string }{
		{`{"id":"a","argv":["echo","a` + "\xff" + `b"]}`, "argv[1]"},
		{`{"argv":["x"],"env":{"K":"` + "\xfe" + `"}}`, "env.K"},
		{`{"env":{"` + "\xff" + `":"v"}}`, "env (a key)"},
		{`{"files":{"a":"ok"},"cwd":"` + "\xff" + `"}`, "cwd"},
		{`{"limits":{"wall_timeout_ms":5},"verify":{"header":"x` + "\xc3" + `"}}`, "verify.header"},
		{`{"id":"ok"}`, ""},
		{`{"id":` + "\xff", ""},
	}
	for _, tc := range tests {
		require.Equal(t, tc.field, InvalidUTF8Field([]byte(tc.doc)), tc.doc)
	}
}

func FuzzInvalidUTF8Field(f *testing.F) {
	f.Add([]byte(`{"argv":["a` + "\xff" + `"]}`))
	f.Add([]byte(`[[{"a":[1,{"b":"` + "\xfe" + `"}]}]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = InvalidUTF8Field(data) // never panics
	})
}
