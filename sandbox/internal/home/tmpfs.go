package home

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a tmpfs of size bytes at dir, mode 0700, owned by
// uid:gid: the home is then bounded by the kernel, which answers ENOSPC
// past size, and past initproc.TmpfsInodes(size) files. nosuid and nodev like every writable mount of a sandbox;
// exec stays allowed (tasks build and run programs in their home). The
// error is mount(2)'s.
func MountTmpfs(dir string, size int64, uid, gid uint32) error {
	data := "mode=0700,size=" + strconv.FormatInt(size, 10) + ",nr_inodes=" + strconv.FormatInt(initproc.TmpfsInodes(size), 10) +
		",uid=" + fmt.Sprint(uid) + ",gid=" + fmt.Sprint(gid)
	return unix.Mount("warren-home", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data)
}

// ResizeTmpfs sets the tmpfs mounted at dir to size bytes (and its
// inodes to match). It fails when the tmpfs already holds more. The error is mount(2)'s.
func ResizeTmpfs(dir string, size int64) error {
	data := "size=" + strconv.FormatInt(size, 10) + ",nr_inodes=" + strconv.FormatInt(initproc.TmpfsInodes(size), 10)
	return unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, data)
}

// UnmountTmpfs detaches the tmpfs mounted at dir; its pages are freed
// once no sandbox namespace holds it any more. A tmpfs already gone (dir
// not a mount point, or gone itself) is fine. The error is umount2(2)'s.
func UnmountTmpfs(dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// DiskFull reports whether the home tmpfs at dir has no block left: the
// task hit its disk limit (a write failed with ENOSPC, or the last one
// filled it exactly). Read before teardown. Anything but a tmpfs is never
// full.
func DiskFull(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.TMPFS_MAGIC && st.Blocks > 0 && st.Bfree == 0
}
