package session

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
)

// A foreground command that leaves a background child holding its output
// pipes returns once the drain grace has passed, with what it wrote; the
// child lives on in the session.
func TestForegroundReturnsDespiteAChildHoldingItsPipes(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		t0 := time.Now()
		res, out, _ := run(t, s, sh("sleep 1000 & echo $!"))
		require.Equal(t, 0, res.ExitCode)
		require.Less(t, time.Since(t0), 20*time.Second)
		require.NotEmpty(t, out)
		res, _, _ = run(t, s, sh("kill -0 "+out[:len(out)-1]))
		require.Equal(t, 0, res.ExitCode, "the child lives on")
	})
}

// The memory limit bounds the session: with a cgroup (a root worker) a
// command over it is killed and the session lives on; with rlimits only
// (an ordinary worker) a limit below the Go agent's address space fails
// Start with ErrAgent instead of a session that cannot run.
func TestMemoryLimit(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		spec := Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Memory: 256 << 20, Wall: time.Minute}}}
		if os.Geteuid() != 0 {
			_, err := Start(context.Background(), r, spec)
			require.ErrorIs(t, err, ErrAgent)
			t.Log(err)
			return
		}
		s := start(t, r, spec)
		res, _, errOut := run(t, s, ExecRequest{Argv: []string{"python3", "-c", "x = bytearray(1 << 30); x[::4096] = b'x' * len(x[::4096])"}})
		require.NotEqual(t, 0, res.ExitCode, errOut)
		res, _, _ = run(t, s, ExecRequest{Argv: []string{"true"}})
		require.Equal(t, 0, res.ExitCode, "the session outlives its command's OOM kill")
		require.NoError(t, s.Close(context.Background()))
		require.Contains(t, s.Result().ResourceLimits, "cgroup")
		require.Positive(t, s.Result().OOMKills)
	})
}
