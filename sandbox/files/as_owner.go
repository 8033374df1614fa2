package files

import (
	"context"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// The public operations run as the Home's access says (Access): by
// default as the calling process, which chowns what it creates to the
// owner; with AsOwner on a thread whose filesystem ids are the owner's.

// Access is how a Home's operations act on it.
type Access int

const (
	// Chown acts as the calling process and gives what it creates to
	// the owner (fchown). The default.
	Chown Access = iota
	// AsOwner acts with the owner's uid and gid as the calling thread's
	// filesystem ids (setfsuid, setfsgid on a locked OS thread), so the
	// kernel sees the sandbox's own user: needed where the home is a
	// filesystem of the sandbox's user namespace, in which a root
	// worker's ids have no name (creating a file fails with EOVERFLOW),
	// and permissions are checked as they are for the sandbox's commands.
	// Only for a root caller with an Owner; otherwise it is Chown.
	AsOwner
)

// OpenAs opens the home directory dir for owner, its operations acting
// as access says.
func OpenAs(dir string, owner Owner, access Access) (*Home, error) {
	h, err := Open(dir, owner)
	if err != nil {
		return nil, err
	}
	h.asOwner = access == AsOwner && owner.UID > 0 && unix.Geteuid() == 0
	return h, nil
}

// as runs fn with the owner's filesystem ids when the Home acts as its
// owner, else as it is. A thread whose ids could not be put back is not
// unlocked: it ends with its goroutine, never serving another.
func (h *Home) as(fn func() error) error {
	if !h.asOwner {
		return fn()
	}
	runtime.LockOSThread()
	if err := setFSIDs(h.owner.UID, h.owner.GID); err != nil {
		if setFSIDs(0, 0) == nil {
			runtime.UnlockOSThread()
		}
		return err
	}
	err := fn()
	if setFSIDs(0, 0) == nil {
		runtime.UnlockOSThread()
	}
	return err
}

// setFSIDs sets this thread's filesystem gid, then uid (a gid change
// needs the privilege a uid change may drop), and checks they took:
// setfsuid reports no error, only the previous id.
func setFSIDs(uid, gid int) error {
	unix.Setfsgid(gid)
	unix.Setfsuid(uid)
	// An invalid id (-1) changes nothing and returns the current one.
	if got, _ := unix.SetfsgidRetGid(-1); got != gid {
		return fmt.Errorf("files: setfsgid %d: still %d", gid, got)
	}
	if got, _ := unix.SetfsuidRetUid(-1); got != uid {
		return fmt.Errorf("files: setfsuid %d: still %d", uid, got)
	}
	return nil
}

// Read returns up to length bytes of the file at p from offset (length < 0:
// to the end).
func (h *Home) Read(ctx context.Context, p string, offset, length int64) (data []byte, err error) {
	err = h.as(func() error { data, err = h.read(ctx, p, offset, length); return err })
	return data, err
}

// Write writes data to the file at p and returns its new size. A write
// the home's quota cannot take fails with a *QuotaError (ErrDiskFull).
func (h *Home) Write(ctx context.Context, p string, data []byte, opts WriteOptions) (size int64, err error) {
	err = h.as(func() error { size, err = h.write(ctx, p, data, opts); return err })
	return size, h.full(err)
}

// Stat describes the entry at p without following a final symlink.
func (h *Home) Stat(ctx context.Context, p string) (e Entry, err error) {
	err = h.as(func() error { e, err = h.stat(ctx, p); return err })
	return e, err
}

// List describes the entries of the directory at p, sorted by name.
func (h *Home) List(ctx context.Context, p string) (es []Entry, err error) {
	err = h.as(func() error { es, err = h.list(ctx, p); return err })
	return es, err
}

// Mkdir creates the directory at p and its missing parents (0700, owned
// by the sandbox).
func (h *Home) Mkdir(ctx context.Context, p string) error {
	return h.full(h.as(func() error { return h.mkdir(ctx, p) }))
}

// Delete removes the entry at p: a file, a symlink (the link itself, never
// its target), an empty directory, or with recursive a whole tree, walked
// by descriptor without following symlinks.
func (h *Home) Delete(ctx context.Context, p string, recursive bool) error {
	return h.as(func() error { return h.delete(ctx, p, recursive) })
}
