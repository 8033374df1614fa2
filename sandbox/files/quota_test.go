package files

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

const kib = 1 << 10

// requireDiskFull checks err is a refusal by a limit of limit bytes.
func requireDiskFull(t *testing.T, err error, limit int64) *QuotaError {
	t.Helper()
	require.ErrorIs(t, err, ErrDiskFull)
	var qe *QuotaError
	require.True(t, errors.As(err, &qe), "%v", err)
	require.Equal(t, limit, qe.Limit)
	require.Contains(t, err.Error(), "("+strconv.FormatInt(limit, 10)+" bytes)", "the message names the limit")
	return qe
}

// TestCountedQuota: a home no filesystem bounds (HeldByCount) refuses a
// write that would take its usage past the limit, counting what others
// wrote into it (each inode once: a hard link is not counted twice) and
// nothing a symlink points to; a refused write leaves nothing. The
// controls: a write within the limit, and rewrites that do not grow the
// home, succeed.
func TestCountedQuota(t *testing.T) {
	const limit = 1024 * kib
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	require.NoError(t, os.WriteFile(outside, make([]byte, 4*limit), 0o600))
	home := filepath.Join(dir, "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, "by-command"), bytes.Repeat([]byte{1}, 512*kib), 0o600))
	require.NoError(t, os.Link(filepath.Join(home, "by-command"), filepath.Join(home, "linked")))
	require.NoError(t, os.Symlink(outside, filepath.Join(home, "big-link")))
	h, err := Open(home, NoOwner)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	h.SetQuota(Quota{Bytes: limit, Holder: HeldByCount})
	ctx := context.Background()

	_, err = h.Write(ctx, "sub/api", make([]byte, 256*kib), WriteOptions{Parents: true})
	require.NoError(t, err, "control: within the limit")
	_, err = h.Write(ctx, "new/over", make([]byte, 300*kib), WriteOptions{Parents: true})
	qe := requireDiskFull(t, err, limit)
	require.GreaterOrEqual(t, qe.Used, int64(768*kib), "what the command wrote counts, once")
	require.Less(t, qe.Used, int64(limit), "the linked file counts once, the symlink's target not at all")
	_, err = os.Lstat(filepath.Join(home, "new"))
	require.ErrorIs(t, err, fs.ErrNotExist, "a refused write leaves nothing, its parents included")

	_, err = h.Write(ctx, "sub/api", make([]byte, 128*kib), WriteOptions{})
	require.NoError(t, err, "control: a replacement that shrinks the file")
	_, err = h.Write(ctx, "sub/api", make([]byte, 64*kib), WriteOptions{Offset: 32 * kib, Ranged: true})
	require.NoError(t, err, "control: a ranged write within the file")
	_, err = h.Write(ctx, "sub/api", make([]byte, 400*kib), WriteOptions{Offset: 128 * kib, Ranged: true})
	requireDiskFull(t, err, limit)
}

// TestFilesystemQuota: on a home that is a filesystem of the limit's size
// (HeldByFilesystem, a tmpfs), a write its free space cannot take is
// refused before any byte lands, and an ENOSPC met while writing (the
// filesystem filled meanwhile, here by the hook) is the same refusal.
// The control: a write within the limit succeeds. An unprivileged test
// run mounts the tmpfs in a user namespace of its own (onTmpfs).
func TestFilesystemQuota(t *testing.T) {
	const limit = 1024 * kib
	onTmpfs(t, limit, func(home string) {
		h, err := Open(home, NoOwner)
		require.NoError(t, err)
		defer h.Close()
		h.SetQuota(Quota{Bytes: limit, Holder: HeldByFilesystem})
		ctx := context.Background()

		_, err = h.Write(ctx, "api", make([]byte, 512*kib), WriteOptions{})
		require.NoError(t, err, "control: within the limit")
		_, err = h.Write(ctx, "over", make([]byte, 768*kib), WriteOptions{})
		requireDiskFull(t, err, limit)
		_, err = os.Lstat(filepath.Join(home, "over"))
		require.ErrorIs(t, err, fs.ErrNotExist, "a write refused ahead leaves nothing")

		testHookAdmitted = func() { fill(t, filepath.Join(home, "filler")) }
		defer func() { testHookAdmitted = nil }()
		_, err = h.Write(ctx, "late", make([]byte, 64*kib), WriteOptions{})
		qe := requireDiskFull(t, err, limit)
		require.ErrorIs(t, err, syscall.ENOSPC, "the filesystem refused it")
		require.Zero(t, qe.Need)
	})
}

// TestFilesystemQuotaOnALargerFilesystemCounts: a home said to be held by
// its filesystem whose filesystem is larger than the limit (a host
// directory handed over by mistake) is held by count: a write past the
// limit is refused all the same. The control: one within it succeeds.
func TestFilesystemQuotaOnALargerFilesystemCounts(t *testing.T) {
	const limit = 1024 * kib
	h, err := Open(t.TempDir(), NoOwner)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	h.SetQuota(Quota{Bytes: limit, Holder: HeldByFilesystem})
	ctx := context.Background()
	_, err = h.Write(ctx, "api", make([]byte, 512*kib), WriteOptions{})
	require.NoError(t, err, "control: within the limit")
	_, err = h.Write(ctx, "over", make([]byte, 768*kib), WriteOptions{})
	requireDiskFull(t, err, limit)
}

// fill writes to p until its filesystem is full.
func fill(t *testing.T, p string) {
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	for {
		if _, err := f.Write(make([]byte, 64*kib)); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			return
		}
	}
}

// tmpfsEnv carries the tmpfs size to onTmpfs's child.
const tmpfsEnv = "WARREN_FILES_TEST_TMPFS"

// onTmpfs runs fn on a fresh tmpfs of size bytes. As root it mounts one
// here; otherwise it runs the calling test again in a child in a user and
// mount namespace of its own, where the child mounts it, and fails when
// the child fails. The calling test must call it first, once.
func onTmpfs(t *testing.T, size int64, fn func(dir string)) {
	t.Helper()
	if os.Geteuid() != 0 && os.Getenv(tmpfsEnv) == "" {
		runInUserNamespace(t, size)
		return
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, unix.Mount("warren-files-test", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)))
	defer func() { require.NoError(t, unix.Unmount(dir, unix.MNT_DETACH)) }()
	fn(dir)
}

// runInUserNamespace runs t's test in a child of this binary that is
// root of a new user namespace with a mount namespace of its own.
func runInUserNamespace(t *testing.T, size int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), tmpfsEnv+"="+strconv.FormatInt(size, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the test in a user namespace:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "%s", out)
}
