package home

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A home tmpfs is mounted owned by the given uid, fills at its size
// (DiskFull), grows when resized and refuses to shrink below what it
// holds, and unmounts once; unmounting it again is fine. The control: a
// directory on another filesystem is never full.
func TestTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a tmpfs on the host")
	}
	const mib = 1 << 20
	dir := t.TempDir()
	require.False(t, DiskFull(dir), "not a tmpfs")
	require.NoError(t, MountTmpfs(dir, mib, 12345, 12345))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, uint32(12345), fi.Sys().(*syscall.Stat_t).Uid)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.False(t, DiskFull(dir))

	err = os.WriteFile(filepath.Join(dir, "f"), make([]byte, 2*mib), 0o600)
	require.ErrorIs(t, err, unix.ENOSPC)
	require.True(t, DiskFull(dir))

	require.NoError(t, ResizeTmpfs(dir, 4*mib))
	require.False(t, DiskFull(dir))
	require.Error(t, ResizeTmpfs(dir, mib/2), "it holds a full MiB")

	require.NoError(t, UnmountTmpfs(dir))
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	require.NotEqual(t, int64(unix.TMPFS_MAGIC), int64(st.Type), "unmounted")
	require.NoError(t, UnmountTmpfs(dir), "already gone")
}
