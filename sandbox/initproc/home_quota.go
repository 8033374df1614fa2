package initproc

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// HomeQuota asks the init to bound the home with a size-capped tmpfs in
// its own mount namespace (an unprivileged worker, which cannot mount on
// the host): mounted over Path before the binds are opened, so the bind
// of Path carries the tmpfs into the view, and seeded with what the
// worker wrote at Path (the task's files and working directory).
type HomeQuota struct {
	Path string `json:"path"`
	Size int64  `json:"size"` // bytes
}

// mountHomeQuota mounts the home tmpfs over q.Path and copies the seed
// into it. The seed was written by the worker before the init started
// and holds only directories and regular files; anything else fails the
// run.
func mountHomeQuota(q *HomeQuota) error {
	const step = "mount disk quota"
	seed, err := unix.Open(q.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(step, q.Path, err)
	}
	defer unix.Close(seed)
	data := fmt.Sprintf("mode=0700,size=%d", q.Size)
	if err := unix.Mount("warren-home", fdPath(seed), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fail(step, q.Path, err)
	}
	home, err := unix.Open(q.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(step, q.Path, err)
	}
	defer unix.Close(home)
	if err := copyTree(seed, home); err != nil {
		// ENOSPC here: the task's own files exceed its disk limit.
		return fail("copy files into disk quota", q.Path, err)
	}
	return nil
}

// copyTree copies the directories and regular files under src into dst,
// with their permission bits, following no symlink.
func copyTree(src, dst int) error {
	d, err := unix.Openat(src, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	dir := os.NewFile(uintptr(d), "seed")
	defer dir.Close()
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range ents {
		var st unix.Stat_t
		if err := unix.Fstatat(src, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		perm := st.Mode & 0o7777 &^ (unix.S_ISUID | unix.S_ISGID)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := copyDir(src, dst, e.Name(), perm); err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := copyFile(src, dst, e.Name(), perm); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a directory or regular file", e.Name())
		}
	}
	return nil
}

func copyDir(src, dst int, name string, perm uint32) error {
	if err := unix.Mkdirat(dst, name, perm); err != nil {
		return err
	}
	s, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	d, err := unix.Openat(dst, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	return copyTree(s, d)
}

func copyFile(src, dst int, name string, perm uint32) error {
	s, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	in := os.NewFile(uintptr(s), name)
	defer in.Close()
	d, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(d), name)
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
