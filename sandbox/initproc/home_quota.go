package initproc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// HomeQuota asks the init to bound the home with a size-capped tmpfs in
// its own mount namespace (an unprivileged worker, which cannot mount on
// the host): mounted over Path before the binds are opened, so the bind
// of Path carries the tmpfs into the view. It starts empty: the worker
// writes the task's files into it through /proc/<init>/root while the
// init waits (Config.Prepare).
type HomeQuota struct {
	Path string `json:"path"`
	Size int64  `json:"size"` // bytes
}

// mountHomeQuota mounts the home tmpfs over q.Path, owned by the init's
// uid, nosuid and nodev like every writable mount of the view.
func mountHomeQuota(q *HomeQuota) error {
	const step = "mount disk quota"
	dir, err := unix.Open(q.Path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(step, q.Path, err)
	}
	defer unix.Close(dir)
	data := fmt.Sprintf("mode=0700,size=%d,nr_inodes=%d", q.Size, TmpfsInodes(q.Size))
	if err := unix.Mount("warren-home", fdPath(dir), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fail(step, q.Path, err)
	}
	for _, d := range tmpInDirs {
		if err := unix.Mkdir(q.Path+"/"+d, 0o700); err != nil {
			return fail(step, q.Path+"/"+d, err)
		}
	}
	return nil
}

// tmpInDirs are the directories of a bounded home bound at /tmp and
// /dev/shm (NSConfig.TmpIn), in that order.
var tmpInDirs = [2]string{".tmp", ".shm"}

// TmpInDirs returns tmpInDirs, for the worker that mounts a home on the
// host.
func TmpInDirs() [2]string { return tmpInDirs }

// openTmpIn opens the /tmp and /dev/shm sources of a bounded home (none
// when home is empty).
func openTmpIn(home string) ([]openedSource, error) {
	if home == "" {
		return nil, nil
	}
	out := make([]openedSource, 0, len(tmpInDirs))
	for _, d := range tmpInDirs {
		s, err := openSource(home + "/" + d)
		if err != nil {
			for _, o := range out {
				_ = unix.Close(o.fd)
			}
			return nil, fail("open bind source", home+"/"+d, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// bindTmp binds a directory of the bounded home at path under root,
// nosuid and nodev like the fresh tmpfs it replaces. Programs may run
// from it, as from the home it is part of.
func bindTmp(root int, src openedSource, path string) error {
	target, err := makeTarget(root, path, true)
	if err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	defer unix.Close(target)
	if err := unix.Mount(fdPath(src.fd), fdPath(target), "", unix.MS_BIND, ""); err != nil {
		return err
	}
	flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOSUID|unix.MS_NODEV) | src.flags
	return unix.Mount("", fdPath(root)+path, "", flags, "")
}
