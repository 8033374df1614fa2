package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
)

func TestLeanHostIOScan(t *testing.T) {
	t.Parallel()
	p := &Profile{HostIO: HostIOReject}
	tests := []struct {
		name, src string
		want      []string // "line N: token" prefixes, in order
	}{
		{"plain", "theorem t : True := trivial", nil},
		{"eval", "theorem t : True := trivial\n#eval IO.FS.writeFile \"/tmp/x\" \"\"", []string{"line 2: #eval"}},
		{"eval bang", "#eval! IO.println 1", []string{"line 1: #eval!"}},
		{"run_cmd on the proof's line", "theorem t : True := trivial run_cmd pure ()", []string{"line 1: run_cmd"}},
		{"initialize", "initialize IO.println \"hi\"", []string{"line 1: initialize"}},
		{"elab and attributes", "elab \"x\" : term => pure default\n@[command_elab foo, simp] def f := 1\n@[simp] theorem s : True := trivial",
			[]string{"line 1: elab", "line 2: @[command_elab]"}},
		{"run_tac in a proof", "theorem t : True := by run_tac pure ()", []string{"line 1: run_tac"}},
		{"comments and strings", "-- #eval 1\n/- /- nested #eval -/ run_cmd -/ def s := \"#eval \\\" run_cmd\" def r := r#\"\"#eval\"# def c := '\"'\ntheorem t : True := trivial",
			nil},
		{"after a char literal", "def c := '\"' #eval 1", []string{"line 1: #eval"}},
		{"after an escaped char", "def c := '\\'' #eval 1", []string{"line 1: #eval"}},
		{"identifier with a prime is not a char", "theorem h' : True := trivial #eval 1 -- '", []string{"line 1: #eval"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := leanHostIO(p, tc.src)
			if tc.want == nil {
				require.Nil(t, v)
				return
			}
			require.NotNil(t, v)
			require.Equal(t, messages.ReasonDisallowedCommand, v.Reason)
			lines := strings.Split(v.Messages, "\n")[1:]
			require.Len(t, lines, len(tc.want), v.Messages)
			for i, w := range tc.want {
				require.True(t, strings.HasPrefix(lines[i], w), "%q does not start with %q", lines[i], w)
			}
		})
	}
	require.Nil(t, leanHostIO(&Profile{HostIO: HostIOAllow}, "#eval 1"), "host_io: allow lets it through")
}

func FuzzLeanHostIO(f *testing.F) {
	f.Add("#eval 1 -- x\n/- -/ \"s\" 'c' r#\"x\"#")
	f.Fuzz(func(t *testing.T, src string) {
		_ = leanHostIO(&Profile{HostIO: HostIOReject}, src)
		if !strings.Contains(src, "\n") {
			require.Nil(t, leanHostIO(&Profile{HostIO: HostIOReject}, "-- "+src), "a line comment holds no command")
		}
	})
}

// TestLeanFileHostIO runs proofs that run code at elaboration through the
// real Checker and the lean-file double: refused before any step runs
// under host_io: reject; the control (host_io: allow) shows the pipeline
// would have accepted them.
func TestLeanFileHostIO(t *testing.T) {
	sb := testRunner(t)
	c := newTestChecker(t)
	for _, proof := range []string{
		"theorem t : P := trivial\n#eval IO.FS.writeFile \"/tmp/warren-eval\" \"x\"",
		"run_cmd IO.Process.run {cmd := \"sh\"}\ntheorem t : P := trivial",
		"initialize IO.println \"at init\"\ntheorem t : P := trivial",
	} {
		t.Run(strings.Fields(proof)[0]+"…", func(t *testing.T) {
			p := leanFileDoubleProfile(t, "")
			spec := &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: proof}
			v, u, err := c.Check(context.Background(), sb.run, p, spec)
			require.NoError(t, err)
			require.Equal(t, messages.ReasonDisallowedCommand, v.Reason, v.Messages)
			require.Zero(t, u.Steps, "refused before anything runs")

			p.HostIO = HostIOAllow
			v, u, err = c.Check(context.Background(), sb.run, p, spec)
			require.NoError(t, err)
			require.True(t, v.Accepted, "control: with the policy off the double accepts it: %+v", v)
			require.Positive(t, u.Steps)
		})
	}
	p := leanFileDoubleProfile(t, "")
	v, _, err := c.Check(context.Background(), sb.run, p, &messages.VerifySpec{Theorem: "t", Statement: "P",
		Proof: "-- we do not #eval anything\ntheorem t : P := trivial"})
	require.NoError(t, err)
	require.True(t, v.Accepted, "a comment mentioning #eval is fine: %+v", v)
}
