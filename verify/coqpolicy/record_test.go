package coqpolicy

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func fmtInt(n int) string { return strconv.Itoa(n) }

func TestParse(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte("{\"kind\":\"ready\"}\n{\"kind\":\"declared\",\"line\":2,\"command\":\"Axiom\",\"names\":[\"a\"]}\n" +
		"{\"kind\":\"module\",\"line\":3,\"command\":\"Declare Module\",\"names\":[\"X\"]}\n" +
		"{\"kind\":\"refused\",\"line\":4,\"command\":\"Load\",\"why\":\"reads\"}\n"))
	require.NoError(t, err)
	require.True(t, r.Ready)
	require.Equal(t, "Load", r.Refused.Command)
	require.Len(t, r.Declared, 1)
	require.Len(t, r.Modules, 1)
	require.Equal(t, "line 2: Axiom a", r.Declared[0].Describe(func(n int) string { return "line " + strconv.Itoa(n) }))

	for _, bad := range []string{
		`{"kind":"other"}`,
		`{"kind":"refused","line":1}`,
		`{"kind":"ready","extra":1}`,
		`not json`,
	} {
		_, err := Parse([]byte(bad))
		require.Error(t, err, bad)
	}
	r, err = Parse(nil)
	require.NoError(t, err)
	require.False(t, r.Ready, "no records: not ready")
}

// FuzzParse: the decoder never panics, and what it accepts it accepts
// whole (a known kind on every line).
func FuzzParse(f *testing.F) {
	f.Add([]byte("{\"kind\":\"ready\"}\n"))
	f.Add([]byte("{\"kind\":\"refused\",\"line\":4,\"command\":\"Load\",\"why\":\"x\"}\n{\"kind\":\"ready\"}"))
	f.Add([]byte("{\"kind\":\"declared\",\"line\":2,\"command\":\"Axiom\",\"names\":[\"a\",\"\\u0000\"]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			return
		}
		if r.Refused != nil {
			require.NotEmpty(t, r.Refused.Command)
		}
		for _, d := range r.Declared {
			require.Equal(t, KindDeclared, d.Kind)
		}
	})
}
