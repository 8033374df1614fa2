package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestUIDPoolHandsOutDistinctUIDsAndReusesOnlyVerifiedOnes(t *testing.T) {
	p := newUIDPool(5000, 3)
	ok := func(uint32) error { return nil }
	a, err := p.acquire()
	require.NoError(t, err)
	b, err := p.acquire()
	require.NoError(t, err)
	c, err := p.acquire()
	require.NoError(t, err)
	require.ElementsMatch(t, []uint32{5000, 5001, 5002}, []uint32{a, b, c})
	_, err = p.acquire()
	require.ErrorIs(t, err, ErrUIDPoolExhausted)

	require.NoError(t, p.release(a, ok))
	got, err := p.acquire()
	require.NoError(t, err)
	require.Equal(t, a, got, "a verified uid is reused")

	leak := errors.New("process 123 still alive")
	require.ErrorIs(t, p.release(b, func(uint32) error { return leak }), leak)
	require.Contains(t, p.quarantinedUIDs(), b)
	require.NoError(t, p.release(c, ok))
	require.NoError(t, p.release(got, ok))
	seen := map[uint32]bool{}
	for range 2 {
		u, err := p.acquire()
		require.NoError(t, err)
		seen[u] = true
	}
	require.False(t, seen[b], "a quarantined uid is never handed out again")
	_, err = p.acquire()
	require.ErrorIs(t, err, ErrUIDPoolExhausted)
}

func TestSharedUIDPoolIsPerRange(t *testing.T) {
	require.Same(t, sharedUIDPool(7000, 10), sharedUIDPool(7000, 10))
	require.NotSame(t, sharedUIDPool(7000, 10), sharedUIDPool(8000, 10))
}

func TestLivePIDsOfUIDFindsALiveProcessNotAZombie(t *testing.T) {
	pids, err := livePIDsOfUID(uint32(currentUID()))
	require.NoError(t, err)
	require.Contains(t, pids, os.Getpid(), "control: this test process itself")
	pids, err = livePIDsOfUID(4_000_000_123)
	require.NoError(t, err)
	require.Empty(t, pids)

	// A child that exited but is not reaped yet is a zombie: dead, not live.
	cmd := exec.Command("/bin/true")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		return err == nil && strings.Contains(string(b), ") Z ")
	}, 10*time.Second, time.Millisecond, "the child becomes a zombie")
	live, zombies, err := uidProcesses(uint32(currentUID()))
	require.NoError(t, err)
	require.NotContains(t, live, cmd.Process.Pid)
	require.Contains(t, zombies, cmd.Process.Pid)
}

func currentUID() int { return os.Getuid() }

func TestReleaseUIDQuarantinesWhenTeardownIsIncomplete(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the uid pool is used by root workers only")
	}
	base := 3_900_000_000 + uint32(os.Getpid()%1000)*10
	r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: t.TempDir(), UIDBase: base, UIDCount: 4})
	require.NoError(t, err)
	r.setupHost()
	// A pool of this test's own: the process-wide one keeps what an earlier
	// run (-count) quarantined.
	r.pool = newUIDPool(base, 4)
	uid, err := r.pool.acquire()
	require.NoError(t, err)
	require.NoError(t, r.releaseUID(uid, "", nil), "control: nothing of the uid left")

	uid, err = r.pool.acquire()
	require.NoError(t, err)
	// A process of that uid outlived the run.
	p := exec.Command("/bin/sleep", "60")
	p.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Process.Kill(); _ = p.Wait() })
	require.Error(t, r.releaseUID(uid, "", nil))
	require.Contains(t, r.pool.quarantinedUIDs(), uid)

	// A scratch directory that is still there.
	uid, err = r.pool.acquire()
	require.NoError(t, err)
	require.Error(t, r.releaseUID(uid, t.TempDir(), nil))
	require.Contains(t, r.pool.quarantinedUIDs(), uid)

	if r.cgroups.Version == 0 {
		return
	}
	// A process left in the run's cgroup.
	uid, err = r.pool.acquire()
	require.NoError(t, err)
	cg, err := r.cgroups.Create(fmt.Sprintf("quarantine-test-%d", os.Getpid()), 64<<20, 16)
	require.NoError(t, err)
	q := exec.Command("/bin/sleep", "60")
	require.NoError(t, q.Start())
	require.NoError(t, cg.Attach(q.Process.Pid, false))
	t.Cleanup(func() { _ = q.Process.Kill(); _ = q.Wait(); _ = cg.Remove() })
	require.Error(t, r.releaseUID(uid, "", cg))
	require.Contains(t, r.pool.quarantinedUIDs(), uid)
}
