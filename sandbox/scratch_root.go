package sandbox

import (
	"errors"
	"os"
	"syscall"

	"github.com/warrenhq/warren/sandbox/internal/home"
)

// ErrScratchRootNotPrivate means the default scratch root exists but is
// not this user's own private directory (owned by another user, a
// symlink, or writable by others): it is refused, never used or fixed up.
var ErrScratchRootNotPrivate = home.ErrRootNotPrivate

// makeScratchRoot creates the scratch root (home.MakeRoot; explicit: the
// operator chose it); a failed step is the SetupError of that step.
func makeScratchRoot(dir string, explicit bool) error {
	err := home.MakeRoot(dir, explicit)
	var se *home.StepError
	if errors.As(err, &se) {
		return &SetupError{Step: se.Step, Path: se.Path, Err: se.Err}
	}
	return err
}

// sweepRoots are the scratch roots a Runner sweeps: its own (root) and,
// on the default root, the earlier shared default when this user owns it.
func sweepRoots(root string, defaultRoot bool) []string {
	roots := []string{root}
	if defaultRoot {
		if fi, err := os.Lstat(home.LegacyRoot()); err == nil && fi.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() {
				roots = append(roots, home.LegacyRoot())
			}
		}
	}
	return roots
}
