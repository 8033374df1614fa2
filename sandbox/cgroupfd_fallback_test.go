package sandbox

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// TestInitStartsWhereClone3IsRefused: on a cgroup v2 host the init is born
// in its cgroup (clone3 with CLONE_INTO_CGROUP); in a container whose
// seccomp profile answers clone3 with ENOSYS it must still start (with
// clone, attached through cgroup.procs later) instead of making every mode
// unavailable. The control: unconfined, clone3 exists. This host is cgroup
// v1, so the cgroup directory here is a plain one: clone3 is refused before
// the kernel looks at it.
func TestInitStartsWhereClone3IsRefused(t *testing.T) {
	if !inContainerChild(t) {
		_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		require.NotEqual(t, unix.ENOSYS, errno, "control: clone3 exists unconfined")
		runInContainerChild(t, sandboxtest.ContainerNoNamespaces)
		return
	}
	requireNamespacesRefused(t)
	init, err := openInit(defaultInitPath())
	require.NoError(t, err)
	s, err := startInitIn(init, &syscall.SysProcAttr{}, nil, t.TempDir(), nil, nil, nil)
	require.NoError(t, err, "the init must start without clone3")
	t.Cleanup(func() {
		s.kill(nil)
		s.close()
	})
	require.False(t, s.proc.(*cmdInit).cmd.SysProcAttr.UseCgroupFD, "started without CLONE_INTO_CGROUP, to be attached by cgroup.procs")
	require.False(t, s.bornInCgroup(), "not born in its cgroup: finish must attach it")
}
