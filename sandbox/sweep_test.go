package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStaleSandboxesOfADeadWorkerAreSwept: a worker SIGKILLed mid-run
// leaves its run's scratch directory (and, as root, its cgroups); the next
// Runner on that scratch root removes them, and nothing of a live owner or
// not named by a Runner.
func TestStaleSandboxesOfADeadWorkerAreSwept(t *testing.T) {
	r := nsRunner(t)
	root := r.cfg.ScratchRoot
	m := sleepMarker()
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold", "WARREN_SANDBOX_TEST_ROOT="+root,
		"WARREN_SANDBOX_TEST_SCRIPT=mkdir $HOME/d; echo x > $HOME/d/f; chmod 0 $HOME/d; exec sleep "+m)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { return len(pidsWithArg(t, m)) == 1 }, 20*time.Second, 10*time.Millisecond, stderr.String())

	live := filepath.Join(root, scratchPrefix()+"live") // this process: alive
	foreign := filepath.Join(root, "not-a-run")
	untagged := filepath.Join(root, "run-12345678") // an older name: owner unknown
	for _, d := range []string{live, foreign, untagged} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return len(pidsWithArg(t, m)) == 0 }, 5*time.Second, 10*time.Millisecond)

	// Control: the dead worker's scratch (and cgroups) are still there.
	var stale []string
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range ents {
		if p := filepath.Join(root, e.Name()); p != live && p != foreign && p != untagged {
			stale = append(stale, p)
		}
	}
	require.Len(t, stale, 1, "the killed worker's scratch directory is left behind")
	var staleCgroups []string
	for _, parent := range r.ns.cgroups.parents {
		ents, err := os.ReadDir(parent)
		require.NoError(t, err)
		for _, e := range ents {
			if strings.Contains(e.Name(), filepath.Base(stale[0])) {
				staleCgroups = append(staleCgroups, filepath.Join(parent, e.Name()))
			}
		}
	}
	if r.ns.cgroups.Version != 0 {
		require.NotEmpty(t, staleCgroups, "the killed worker's cgroups are left behind")
	}

	_, err = New(Config{Isolation: IsolationNamespace, ScratchRoot: root})
	require.NoError(t, err)
	require.NoDirExists(t, stale[0], "swept")
	for _, d := range staleCgroups {
		require.NoDirExists(t, d, "swept")
	}
	for _, d := range []string{live, foreign, untagged} {
		require.DirExists(t, d, "not a dead owner's: kept")
	}
}

func TestDeadOwner(t *testing.T) {
	st, ok := processStart(os.Getpid())
	require.True(t, ok)
	self := "run-" + ownerTag() + "-x"
	require.False(t, deadOwner(self), "this process is alive")
	for _, name := range []string{
		"run-" + strings.Split(ownerTag(), ".")[0] + "." + "1" + "-x", // pid reused: other start time
		"run-999999999.1-x", // no such pid
	} {
		require.True(t, deadOwner(name), name)
	}
	for _, name := range []string{"run-12345678", "run--x", "other", "run-a.b-x"} {
		require.False(t, deadOwner(name), name)
	}
	require.NotZero(t, st)
}
