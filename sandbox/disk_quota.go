package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/warrenhq/warren/sandbox/internal/home"
	"golang.org/x/sys/unix"
)

// The disk quota bounds a run's home (scratch directory, its TMPDIR
// included) with a size-capped tmpfs, so the kernel answers ENOSPC at
// Limits.Disk instead of the host's disk filling up. Where the tmpfs is
// mounted depends on who can mount (quotaFor):
//
//   - a root worker (both modes): on the host, at the run's fresh scratch
//     directory, before the task's files are written (acquire); the home
//     stays reachable from the host for the whole run and until teardown;
//   - an unprivileged worker in namespace mode: by the init, in its own
//     mount namespace, over the scratch directory before it is bound into
//     the view (initproc.NSConfig.Home, set by namespaceMode.prepare). The
//     init then waits (its prepare phase, as a warm sandbox's) while the
//     worker opens the home through /proc/<init>/root and writes the
//     task's files into it (box.hold); the descriptor it keeps holds the
//     tmpfs after the sandbox's namespace is gone, until teardown;
//   - an unprivileged worker in Landlock-only mode cannot mount anything:
//     the run is refused (ErrDiskQuotaUnavailable) when Limits.Disk asks
//     for a bound (unbounded must be an operator's explicit choice).
//
// What differs per mode is the mode's: where an unprivileged worker's
// tmpfs goes (mode.unprivilegedQuota) and how the view puts /tmp and
// /dev/shm into the home (namespaceMode.prepare); the rest is the run
// skeleton's (acquire, runCold, the warm sandbox, giveBack).
//
// tmpfs pages are charged to the memory cgroup of the process that
// writes them: a task's files count against Limits.Memory as well.

// ErrDiskQuotaUnavailable means the run's disk limit cannot be enforced
// here; the command was not run.
var ErrDiskQuotaUnavailable = errors.New("sandbox: disk limit cannot be enforced: an unprivileged worker in Landlock-only mode cannot mount the home's tmpfs; run the worker as root, use namespace mode, or turn the limit off (--disk unbounded: the run then shares the host's disk)")

// diskQuota is where a run's home tmpfs is mounted.
type diskQuota int

const (
	quotaNone diskQuota = iota // unbounded (Limits.Disk <= 0) or a caller's directory (Spec.Scratch)
	quotaHost                  // mounted on the host at the scratch directory (root worker)
	quotaInit                  // mounted by the init in its mount namespace (unprivileged, namespace mode)
)

// stepDiskQuota is the SetupError step of a failed disk quota mount.
const stepDiskQuota = "mount disk quota"

// quotaFor chooses how a home of mode m is bounded at size bytes; caller
// is Spec.Scratch. A caller's directory keeps what the run writes: a tmpfs
// over it would hide its contents and lose the writes.
func quotaFor(m mode, caller string, size int64) (diskQuota, error) {
	switch {
	case size <= 0 || caller != "":
		return quotaNone, nil
	case os.Geteuid() == 0:
		return quotaHost, nil
	default:
		return m.unprivilegedQuota()
	}
}

// bound records how s, a fresh home, is bounded and, for quotaHost,
// mounts its tmpfs of size bytes on the host, owned by the sandbox uid
// (home.MountTmpfs).
func (s *scratchDir) bound(q diskQuota, size int64, uid, gid uint32) error {
	if q != quotaHost {
		s.quota, s.size = q, size
		return nil
	}
	if err := home.MountTmpfs(s.path, size, uid, gid); err != nil {
		return &SetupError{Step: stepDiskQuota, Path: s.path, Err: err}
	}
	s.quota, s.size = quotaHost, size
	return nil
}

// resize sets a host-mounted home tmpfs to size bytes (a warm sandbox
// taking a task whose limit differs from the one it was built with). It
// fails when the home already holds more. Other homes keep their bound
// (warmServes gives them only runs of that bound).
func (s *scratchDir) resize(size int64) error {
	if s.quota != quotaHost || size == s.size {
		return nil
	}
	if err := home.ResizeTmpfs(s.path, size); err != nil {
		return &SetupError{Step: "resize disk quota", Path: s.path, Err: err}
	}
	s.size = size
	return nil
}

// unmountQuota detaches a host-mounted home tmpfs; its pages are freed
// once no sandbox namespace holds it any more. A tmpfs already gone is
// fine.
func (s *scratchDir) unmountQuota() error {
	if s.quota != quotaHost {
		return nil
	}
	if err := home.UnmountTmpfs(s.path); err != nil {
		return fmt.Errorf("unmount disk quota %s: %w", s.path, err)
	}
	s.quota = quotaNone
	return nil
}

// heldHome is a home its init mounted (quotaInit), reached through an
// O_PATH descriptor of it that the worker holds: s.path is
// /proc/self/fd/<fd>/. ("/." follows the descriptor's magic link, which
// O_NOFOLLOW users such as sandbox/files would otherwise refuse).
type heldHome struct {
	fd int
	s  scratchDir
}

// hold opens b's home as its init, which has built its view (the home's
// tmpfs included) and waits, sees it, when the init mounted it
// (quotaInit): nothing of the task has run, so no link in the path was
// planted. The descriptor pins the tmpfs after the namespace is gone, so
// Result.DiskFull and Spec.Finished see the home as the task left it;
// giveBack closes it. Other homes are on the host already: nothing to do.
func (b *box) hold(pid int) error {
	if b.home.quota != quotaInit {
		return nil
	}
	path := b.home.path
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root"+path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &SetupError{Step: "open home", Path: path, Err: err}
	}
	b.held = &heldHome{fd: fd, s: scratchDir{path: "/proc/self/fd/" + strconv.Itoa(fd) + "/.", quota: quotaInit, size: b.home.size, undo: func() error { return nil }}}
	return nil
}

// close releases the home; its tmpfs is freed once its namespace is gone
// too. Nil-safe.
func (h *heldHome) close() {
	if h != nil && h.fd >= 0 {
		_ = unix.Close(h.fd)
		h.fd = -1
	}
}

// reached is b's home as the worker reaches it for the task's files and
// Spec.Finished: the held one when its init mounted it, else the host
// directory.
func (b *box) reached() *scratchDir {
	if b.held != nil {
		return &b.held.s
	}
	return &b.home
}

// fill writes spec's files into b's home (scratchDir.fill).
func (b *box) fill(spec Spec) error { return b.reached().fill(spec, b.uid, b.gid) }

// finished completes res from b's home once the run is over and before
// teardown: whether the disk limit was hit, and the caller's
// Spec.Finished with the home's directory.
func (b *box) finished(spec Spec, res *Result) {
	h := b.reached()
	if h.quota != quotaNone {
		res.DiskFull = home.DiskFull(h.path)
	}
	if spec.Finished != nil {
		spec.Finished(h.path)
	}
}

// warmServes says whether a warm sandbox of mode m, whose home was bounded
// at Config.Defaults.Disk, can serve spec: only a run bounded the same
// way. A host-mounted home is resized to the run's limit; an init-mounted
// one keeps its size, so it serves only runs with that limit; an
// unbounded one only unbounded runs. None when the default bound cannot
// be enforced in m (every such run is refused).
//
// A template (template.go) mounts a fresh home of the task's own limit for
// every task: it serves any bounded run.
func (r *Runner) warmServes(m mode, spec Spec) bool {
	warm, err := quotaFor(m, "", r.cfg.Defaults.Disk)
	if err != nil {
		return false
	}
	run, _ := quotaFor(m, spec.Scratch, spec.Limits.Disk)
	if templates(r, m) {
		return run != quotaNone
	}
	return run == warm && (warm != quotaInit || spec.Limits.Disk == r.cfg.Defaults.Disk)
}
