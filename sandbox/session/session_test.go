package session

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
)

func TestExecSmoke(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		res, out, errOut := run(t, s, sh("echo out; echo err >&2; id -u; pwd"))
		require.Equal(t, 0, res.ExitCode, errOut)
		t.Logf("out=%q err=%q pid=%d", out, errOut, res.PID)
		require.Contains(t, out, "out\n")
		require.Equal(t, "err\n", errOut)
		_ = context.Background()
	})
}
