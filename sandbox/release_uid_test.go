package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/ident"
)

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
	r.pool = ident.NewPool(base, 4, "")
	uid, err := r.pool.Acquire()
	require.NoError(t, err)
	require.NoError(t, r.releaseUID(uid, "", nil), "control: nothing of the uid left")

	uid, err = r.pool.Acquire()
	require.NoError(t, err)
	// A process of that uid outlived the run.
	p := exec.Command("/bin/sleep", "60")
	p.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Process.Kill(); _ = p.Wait() })
	require.Error(t, r.releaseUID(uid, "", nil))
	require.Contains(t, r.pool.Quarantined(), uid)

	// A scratch directory that is still there.
	uid, err = r.pool.Acquire()
	require.NoError(t, err)
	require.Error(t, r.releaseUID(uid, t.TempDir(), nil))
	require.Contains(t, r.pool.Quarantined(), uid)

	if r.cgroups.Version == 0 {
		return
	}
	// A process left in the run's cgroup.
	uid, err = r.pool.Acquire()
	require.NoError(t, err)
	cg, err := r.cgroups.Create(fmt.Sprintf("quarantine-test-%d", os.Getpid()), 64<<20, 16)
	require.NoError(t, err)
	q := exec.Command("/bin/sleep", "60")
	require.NoError(t, q.Start())
	require.NoError(t, cg.Attach(q.Process.Pid, false))
	t.Cleanup(func() { _ = q.Process.Kill(); _ = q.Wait(); _ = cg.Remove() })
	require.Error(t, r.releaseUID(uid, "", cg))
	require.Contains(t, r.pool.Quarantined(), uid)
}
