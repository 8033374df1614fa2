package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// TestTheWallLimitCountsFromTheCommandsExec: a run whose setup is slow (an
// init that takes 1.5 s before it starts, as a busy host's can) and whose
// wall limit is 1 s runs its command to the end: the limit is the
// command's, the setup has its own bound. The control: the same command
// that outlives the limit is killed by it.
func TestTheWallLimitCountsFromTheCommandsExec(t *testing.T) {
	dir, err := os.MkdirTemp("", "warren-slow-init-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	slow := filepath.Join(dir, "slow-init")
	base, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: dir})
	require.NoError(t, err)
	script := "#!/bin/bash\nsleep 1.5\nexec -a \"$0\" " + base.cfg.InitPath + " \"$@\"\n"
	require.NoError(t, os.WriteFile(slow, []byte(script), 0o755))

	sandboxtest.RequireUserNS(t)
	r, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: dir, InitPath: slow})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	r.noLayer.Store(true)
	o := modeRun(t, r, IsolationNamespace, Spec{Argv: sh("echo ran"), Limits: Limits{Wall: time.Second}})
	require.False(t, o.res.TimedOut, "%+v", o.res)
	require.Equal(t, 0, o.res.ExitCode, o.stderr)
	require.Equal(t, "ran\n", o.stdout)
	require.Greater(t, o.res.Wall, time.Second, "the setup took its 1.5 s: %+v", o.res)

	o = modeRun(t, r, IsolationNamespace, Spec{Argv: sh("sleep 30"), Limits: Limits{Wall: time.Second}})
	require.True(t, o.res.TimedOut, "control: %+v", o.res)
	require.Equal(t, TimeoutWall, o.res.Timeout)
}
