package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNamespaceRunsACommand(t *testing.T) {
	r := nsRunner(t)
	o := runIn(t, r, Spec{Argv: sh("echo hello; id; cat /proc/self/status | grep -E 'Cap|NoNew|Seccomp'; ls /; mount")})
	t.Log(o.stdout, o.stderr)
	require.Equal(t, 0, o.res.ExitCode)
	require.Equal(t, "namespace", o.res.InForce)
}
