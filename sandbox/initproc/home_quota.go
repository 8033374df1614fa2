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
	data := fmt.Sprintf("mode=0700,size=%d", q.Size)
	if err := unix.Mount("warren-home", fdPath(dir), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fail(step, q.Path, err)
	}
	return nil
}
