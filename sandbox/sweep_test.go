package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

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
	// The dead worker and the next one share a cgroup of this test's own:
	// other Runners on the host cannot sweep its leftovers first.
	tcg := newTestCgroup(t, r.cgroups)
	exe, err := os.Executable()
	require.NoError(t, err)
	argv := tcg.wrap([]string{exe, "-test.run=^$"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=hold", "WARREN_SANDBOX_TEST_ROOT="+root,
		"WARREN_SANDBOX_TEST_SCRIPT=mkdir $HOME/d; echo x > $HOME/d/f; chmod 0 $HOME/d; exec sleep "+m)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { return len(pidsWithArg(t, m)) == 1 }, 20*time.Second, 10*time.Millisecond, stderr.String())
	// Pinned now (pid and start time): the wait below then watches exactly
	// these, without scanning every host process's cmdline.
	sandboxProcs := procIDsOf(t, pidsWithArg(t, m))

	live := filepath.Join(root, scratchPrefix()+"live") // this process: alive
	foreign := filepath.Join(root, "not-a-run")
	untagged := filepath.Join(root, "run-12345678") // an older name: owner unknown
	for _, d := range []string{live, foreign, untagged} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	// The sandbox dies by its parent-death signal. Not a timing margin: it
	// takes milliseconds, and a survivor here is a sandbox that outlived
	// its worker (the failure names its state and pending signals).
	requireGoneWithin(t, sandboxProcs, 5*time.Second, "the sandbox of a SIGKILLed worker")

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
	parents := tcg.parents()
	if len(parents) == 0 {
		// Not cgroup v1: the run cgroups are under the test's own cgroup.
		for _, p := range r.cgroups.Parents() {
			parents = append(parents, p)
		}
	}
	for _, parent := range parents {
		ents, err := os.ReadDir(parent)
		require.NoError(t, err)
		for _, e := range ents {
			if strings.Contains(e.Name(), filepath.Base(stale[0])) {
				staleCgroups = append(staleCgroups, filepath.Join(parent, e.Name()))
			}
		}
	}
	if r.cgroups.Version != 0 {
		require.NotEmpty(t, staleCgroups, "the killed worker's cgroups are left behind")
	}

	// The next worker, in the same cgroup.
	argv = tcg.wrap([]string{exe, "-test.run=^$"})
	next := exec.Command(argv[0], argv[1:]...)
	next.Env = append(os.Environ(), sweeperEnv+"="+root)
	out, err := next.CombinedOutput()
	require.NoError(t, err, "the next worker: %s", out)
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
