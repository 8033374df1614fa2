package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNamespaceRunsACommand(t *testing.T) {
	r := nsRunner(t)
	o := runIn(t, r, Spec{Argv: []string{"echo", "hello"}})
	require.Equal(t, "hello\n", o.stdout, "argv[0] is looked up on the sandbox PATH")
	require.Equal(t, 0, o.res.ExitCode)
	require.Equal(t, "namespace", o.res.InForce)
	require.Positive(t, o.res.Wall)
}
