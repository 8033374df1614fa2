package initproc

import (
	"strings"

	"golang.org/x/sys/unix"
)

// StepHide is the step that covers a hidden path (NSConfig.Hide).
const StepHide Step = "hide"

// hideFlags make a hidden path's cover read-only and inert.
const hideFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// hideAll covers each of paths, a directory of the view under root, with
// an empty tmpfs mounted read-only (nosuid, nodev, noexec) from the start:
// listing it shows nothing, anything below it is ENOENT, nothing can be
// created in it, and the task, without capabilities, can neither unmount
// nor remount it. The path is resolved beneath root without following a
// symlink (the worker resolved it): a component swapped for one since
// fails the run, as a missing one does.
func hideAll(root int, paths []string) error {
	for _, p := range paths {
		fd, err := unix.Openat2(root, strings.TrimPrefix(p, "/"), &unix.OpenHow{
			Flags:   openPathFlags | unix.O_DIRECTORY,
			Resolve: resolveStrict | unix.RESOLVE_BENEATH,
		})
		if err != nil {
			return fail(StepHide, p, err)
		}
		err = unix.Mount("warren-hidden", fdPath(fd), "tmpfs", hideFlags, "mode=0555,size=4k,nr_inodes=1")
		_ = unix.Close(fd)
		if err != nil {
			return fail(StepHide, p, err)
		}
	}
	return nil
}
