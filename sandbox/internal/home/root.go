package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ErrRootNotPrivate means the default scratch root exists but is not
// this user's own private directory (owned by another user, a symlink,
// or writable by others): it is refused, never used or fixed up.
var ErrRootNotPrivate = errors.New("sandbox: the scratch root is not private to this user")

// StepError is a failed step of making the scratch root: what was done,
// to which path, and the system's error. Package sandbox reports it as
// its SetupError of that step.
type StepError struct {
	Step string // e.g. "create scratch root", "check scratch root"
	Path string
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("%s %s: %v", e.Step, e.Path, e.Err) }

func (e *StepError) Unwrap() error { return e.Err }

// DefaultRoot is the scratch root of a Runner without
// Config.ScratchRoot: one per user ($TMPDIR/warren-sandboxes-<euid>), so
// root and ordinary users on one host never share one.
func DefaultRoot() string {
	return filepath.Join(os.TempDir(), "warren-sandboxes-"+strconv.Itoa(os.Geteuid()))
}

// LegacyRoot is the shared default of earlier versions; a Runner on the
// default root still sweeps what dead workers of this user left there.
func LegacyRoot() string { return filepath.Join(os.TempDir(), "warren-sandboxes") }

// PrivateMode is the mode of the default scratch root: 0700, or 0711 for
// root, whose sandbox uids must traverse it to their own directory (they
// still cannot list it).
func PrivateMode() fs.FileMode {
	if os.Geteuid() == 0 {
		return 0o711
	}
	return 0o700
}

// MakeRoot creates the scratch root. An explicit one (the operator's
// choice) is created as needed, 0711; the default one must be this
// user's own: created with PrivateMode, or, when it exists, a real
// directory owned by this user and writable by no one else (its mode is
// then set to PrivateMode), else ErrRootNotPrivate. A failure is a
// *StepError.
func MakeRoot(dir string, explicit bool) error {
	if explicit {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return &StepError{Step: "create scratch root", Path: dir, Err: err}
		}
		return nil
	}
	mode := PrivateMode()
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return &StepError{Step: "create scratch root", Path: dir, Err: err}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return &StepError{Step: "check scratch root", Path: dir, Err: err}
	}
	if err := privateDir(fi); err != nil {
		return &StepError{Step: "check scratch root", Path: dir, Err: fmt.Errorf("%w: %w; remove it (as its owner) or pass --scratch-root (Config.ScratchRoot)", ErrRootNotPrivate, err)}
	}
	if fi.Mode().Perm() != mode {
		// Ours: the umask may have narrowed it (root's sandbox uids need o+x).
		if err := os.Chmod(dir, mode); err != nil {
			return &StepError{Step: "chmod scratch root", Path: dir, Err: err}
		}
	}
	return nil
}

// privateDir says why fi is not a directory private to this user.
func privateDir(fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("it is not a directory (%s)", fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner information")
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("it is owned by uid %d, not by this user (uid %d)", st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("it is writable by group or others (mode %#o)", fi.Mode().Perm())
	}
	return nil
}
