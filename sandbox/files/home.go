package files

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Owner is the sandbox's uid and gid; new files and directories get them.
// A negative UID leaves ownership to the calling process (an ordinary-user
// worker, whose sandboxes share its uid).
type Owner struct {
	UID, GID int
}

// NoOwner keeps new files owned by the caller.
var NoOwner = Owner{UID: -1, GID: -1}

// Home is an open sandbox home. It is safe for concurrent use.
type Home struct {
	fd      int // O_PATH descriptor of the home directory
	owner   Owner
	asOwner bool // operations run with the owner's filesystem ids (OpenAs)
	quota   Quota
	countMu sync.Mutex // one write at a time passes a counted quota (admit)
}

// Open opens the home directory dir for the sandbox owner.
func Open(dir string, owner Owner) (*Home, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &PathError{Op: "open home", Path: dir, Err: classify(err)}
	}
	return &Home{fd: fd, owner: owner}, nil
}

// Close releases the home descriptor.
func (h *Home) Close() error { return unix.Close(h.fd) }

// openat2Missing is set once openat2 turned out to be unavailable (ENOSYS,
// or EPERM from a seccomp profile); tests set it to cover the fallback.
var openat2Missing atomic.Bool

// resolveBeneath is the openat2 resolution that never leaves the home and
// follows no link of any kind.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// openDir opens the directory at the components dirs, relative to the home,
// as an O_PATH descriptor the caller closes.
func (h *Home) openDir(dirs []string) (int, error) {
	if len(dirs) == 0 {
		return unix.Dup(h.fd)
	}
	if !openat2Missing.Load() {
		fd, err := unix.Openat2(h.fd, strings.Join(dirs, "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: resolveBeneath,
		})
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			openat2Missing.Store(true)
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
			// Say which: walk it component by component.
			return h.walk(dirs)
		default:
			return -1, classify(err)
		}
	}
	return h.walk(dirs)
}

// walk opens dirs one component at a time with O_NOFOLLOW.
func (h *Home) walk(dirs []string) (int, error) {
	fd, err := unix.Dup(h.fd)
	if err != nil {
		return -1, err
	}
	for _, c := range dirs {
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = classifyAt(fd, c, err)
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// split normalizes p into its parent directories and final name ("" for
// the home itself).
func split(p string) (norm string, dirs []string, name string, err error) {
	parts, err := components(p)
	if err != nil {
		return "", nil, "", err
	}
	if len(parts) == 0 {
		return "", nil, "", nil
	}
	return strings.Join(parts, "/"), parts[:len(parts)-1], parts[len(parts)-1], nil
}

// classify maps an errno to the package's errors (keeping the errno
// wrapped for errors.Is with fs errors).
func classify(err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return ErrSymlink
	case errors.Is(err, unix.ENOTDIR):
		return ErrNotDir
	case errors.Is(err, unix.EXDEV):
		return ErrEscape
	case errors.Is(err, unix.EISDIR):
		return ErrIsDir
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENODEV):
		return ErrNotRegular
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%w", fs.ErrNotExist)
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%w", fs.ErrExist)
	}
	return err
}

// classifyAt explains a failed O_NOFOLLOW|O_DIRECTORY open of name in dir:
// a symlink, a non-directory, or the original error.
func classifyAt(dir int, name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return ErrSymlink
			}
			return ErrNotDir
		}
	}
	return classify(err)
}

// chown gives a new file or directory to the sandbox owner.
func (h *Home) chown(fd int) error {
	if h.owner.UID < 0 || h.asOwner {
		return nil
	}
	// AT_EMPTY_PATH acts on the descriptor itself, O_PATH ones included.
	return unix.Fchownat(fd, "", h.owner.UID, h.owner.GID, unix.AT_EMPTY_PATH)
}
