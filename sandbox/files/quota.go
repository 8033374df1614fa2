package files

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Quota is a Home's disk limit and what holds the home to it (SetQuota).
type Quota struct {
	// Bytes is the limit; 0 or less: none.
	Bytes int64
	// Holder is what holds the home to Bytes.
	Holder Holder
}

// Holder is what holds a home to its Quota.
type Holder int

const (
	// HeldByFilesystem: the home is a filesystem of Bytes (a size-capped
	// tmpfs), which refuses every writer past it with ENOSPC, the
	// sandbox's commands included. Write refuses ahead of time a write
	// its free space cannot take, so such a write leaves nothing, and
	// reports an ENOSPC met anyway (a command filled it meanwhile) as
	// ErrDiskFull. On a larger filesystem it is HeldByCount (SetQuota).
	HeldByFilesystem Holder = iota
	// HeldByCount: no filesystem holds the home to Bytes (a host
	// directory). Write counts the home's usage (the blocks of every
	// inode under it on its filesystem, once each, whoever wrote it: the
	// sandbox's commands too) and refuses a write that would take it past
	// Bytes. The file methods are held so; nothing holds the commands.
	HeldByCount
)

// SetQuota holds h's writes to q. Call it before h is shared. A home said
// to be held by its filesystem whose filesystem is larger than the limit
// (not the sandbox's own tmpfs) is held by count instead.
func (h *Home) SetQuota(q Quota) {
	if q.Bytes > 0 && q.Holder == HeldByFilesystem && !h.sizedAt(q.Bytes) {
		q.Holder = HeldByCount
	}
	h.quota = q
}

// sizedAt reports whether h's filesystem is at most limit bytes (rounded
// up to its blocks, as a tmpfs size is).
func (h *Home) sizedAt(limit int64) bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(h.fd, &fs) != nil || fs.Bsize <= 0 {
		return false
	}
	return int64(fs.Blocks) <= (limit+fs.Bsize-1)/fs.Bsize
}

// testHookAdmitted runs once a write is admitted and before it writes
// (tests fill the filesystem there). Nil in production.
var testHookAdmitted func()

// admit checks, before the write of size bytes at off to the file name
// in the directory at dirs (ranged: keeping its other bytes), that the
// home's quota takes what it adds. The release it returns ends the
// admission: a counted home admits one write at a time, so two cannot
// both pass the check.
func (h *Home) admit(dirs []string, name string, off int64, size int, ranged bool) (release func(), err error) {
	release = func() {}
	if h.quota.Bytes <= 0 {
		return release, nil
	}
	if h.quota.Holder == HeldByCount {
		h.countMu.Lock()
		release = h.countMu.Unlock
	}
	need := h.growth(dirs, name, off, size, ranged)
	if need > 0 {
		err = h.fits(need)
	}
	if err != nil {
		release()
		return func() {}, err
	}
	if testHookAdmitted != nil {
		testHookAdmitted()
	}
	return release, nil
}

// growth is what a write of size bytes at off to the file name in the
// directory at dirs adds to it: its new end past its current size (a
// file replaced, not ranged, gives all of its size back first; a file
// or directory still missing has none).
func (h *Home) growth(dirs []string, name string, off int64, size int, ranged bool) int64 {
	end := off + int64(size)
	cur := int64(0)
	if dir, err := h.openDir(dirs); err == nil {
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			cur = st.Size
		}
		unix.Close(dir)
	}
	if ranged {
		end = max(end, cur)
	}
	return end - cur
}

// fits refuses need more bytes that the home's quota cannot take.
func (h *Home) fits(need int64) error {
	if h.quota.Holder == HeldByCount {
		used, err := usage(h.fd)
		if err != nil {
			return fmt.Errorf("counting the home's usage against its disk limit: %w", err)
		}
		if used+need > h.quota.Bytes {
			return &QuotaError{Limit: h.quota.Bytes, Used: used, Need: need}
		}
		return nil
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(h.fd, &fs); err != nil {
		return fmt.Errorf("reading the home's free space: %w", err)
	}
	bs := fs.Bsize
	// The filesystem allocates whole blocks.
	if blocks := (need + bs - 1) / bs; blocks > int64(fs.Bavail) {
		return &QuotaError{Limit: h.quota.Bytes, Used: int64(fs.Blocks-fs.Bfree) * bs, Need: need}
	}
	return nil
}

// full reports err, an operation's failure, as the home's disk limit
// reached when the filesystem holding the home to it refused with ENOSPC.
func (h *Home) full(err error) error {
	if err == nil || h.quota.Bytes <= 0 || h.quota.Holder != HeldByFilesystem ||
		!errors.Is(err, unix.ENOSPC) || errors.Is(err, ErrDiskFull) {
		return err
	}
	used := int64(-1)
	var fs unix.Statfs_t
	if unix.Fstatfs(h.fd, &fs) == nil {
		used = int64(fs.Blocks-fs.Bfree) * fs.Bsize
	}
	qe := &QuotaError{Limit: h.quota.Bytes, Used: used, Err: unix.ENOSPC}
	var pe *PathError
	if errors.As(err, &pe) {
		return &PathError{Op: pe.Op, Path: pe.Path, Err: qe}
	}
	return qe
}
