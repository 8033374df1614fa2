package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// The disk quota bounds a run's home (scratch directory, its TMPDIR
// included) with a size-capped tmpfs, so the kernel answers ENOSPC at
// Limits.Disk instead of the host's disk filling up. Where the tmpfs is
// mounted depends on who can mount (diskQuotaFor):
//
//   - a root worker (both modes): on the host, at the run's fresh scratch
//     directory, before the task's files are written; the home stays
//     reachable from the host for the whole run and until teardown;
//   - an unprivileged worker in namespace mode: by the init, in its own
//     mount namespace, over the scratch directory before it is bound into
//     the view (initproc.NSConfig.Home). The init then waits (the warm
//     sandboxes' prepare phase) while the worker opens the home through
//     /proc/<init>/root and writes the task's files into it; the
//     descriptor it keeps holds the tmpfs after the sandbox's namespace is
//     gone, until teardown (launchInitQuota);
//   - an unprivileged worker in Landlock-only mode cannot mount anything:
//     the run is refused (ErrDiskQuotaUnavailable) when Limits.Disk asks
//     for a bound (unbounded must be an operator's explicit choice).
//
// tmpfs pages are charged to the memory cgroup of the process that
// writes them: a task's files count against Limits.Memory as well.

// ErrDiskQuotaUnavailable means the run's disk limit cannot be enforced
// here; the command was not run.
var ErrDiskQuotaUnavailable = errors.New("sandbox: disk limit cannot be enforced: an unprivileged worker in Landlock-only mode cannot mount the home's tmpfs; run the worker as root, use namespace mode, or turn the limit off (--disk unbounded: the run then shares the host's disk)")

// diskQuota is where a run's home tmpfs is mounted.
type diskQuota int

const (
	quotaNone diskQuota = iota // unbounded (Limits.Disk < 0) or a caller's directory (Spec.Scratch)
	quotaHost                  // mounted on the host at the scratch directory (root worker)
	quotaInit                  // mounted by the init in its mount namespace (unprivileged, namespace mode)
)

// diskQuotaFor chooses how spec's home is bounded in the namespace mode
// (landlock false) or the Landlock-only mode.
func diskQuotaFor(spec Spec, landlock bool) (diskQuota, error) {
	switch {
	case spec.Limits.Disk <= 0 || spec.Scratch != "":
		// A caller's directory keeps what the run writes: a tmpfs over it
		// would hide its contents and lose the writes.
		return quotaNone, nil
	case os.Geteuid() == 0:
		return quotaHost, nil
	case !landlock:
		return quotaInit, nil
	default:
		return quotaNone, &SetupError{Step: stepDiskQuota, Err: ErrDiskQuotaUnavailable}
	}
}

// stepDiskQuota is the SetupError step of a failed disk quota mount.
const stepDiskQuota = "mount disk quota"

// mountQuota mounts the home tmpfs of size bytes on the host at the
// scratch directory, owned by the sandbox uid. nosuid and nodev like every
// writable mount of a sandbox; exec stays allowed (tasks build and run
// programs in their home).
func (s *nsScratch) mountQuota(size int64, uid, gid uint32) error {
	data := "mode=0700,size=" + strconv.FormatInt(size, 10) + ",uid=" + fmt.Sprint(uid) + ",gid=" + fmt.Sprint(gid)
	if err := unix.Mount("warren-home", s.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return &SetupError{Step: stepDiskQuota, Path: s.path, Err: err}
	}
	s.quota = true
	return nil
}

// resizeQuota sets a mounted home tmpfs to size bytes (a warm sandbox
// taking a task whose limit differs from the one it was built with). It
// fails when the home already holds more.
func (s *nsScratch) resizeQuota(size int64) error {
	if !s.quota {
		return nil
	}
	if err := unix.Mount("", s.path, "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)); err != nil {
		return &SetupError{Step: "resize disk quota", Path: s.path, Err: err}
	}
	return nil
}

// unmountQuota detaches the home tmpfs; its pages are freed once no
// sandbox namespace holds it any more. A tmpfs already gone is fine.
func (s *nsScratch) unmountQuota() error {
	if !s.quota {
		return nil
	}
	if err := unix.Unmount(s.path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount disk quota %s: %w", s.path, err)
	}
	s.quota = false
	return nil
}

// diskFull reports whether the home tmpfs at dir has no block left: the
// task hit its disk limit (a write failed with ENOSPC, or the last one
// filled it exactly). Read before teardown.
func diskFull(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.TMPFS_MAGIC && st.Blocks > 0 && st.Bfree == 0
}

// applyQuota bounds a fresh cold-run scratch directory on the host
// (quotaHost) before the task's files are written into it.
func (s *nsScratch) applyQuota(q diskQuota, size int64, uid, gid uint32) error {
	if q != quotaHost || !s.owned {
		return nil
	}
	return s.mountQuota(size, uid, gid)
}

// quotaView puts the bounded home into a namespace-mode view: /tmp and
// /dev/shm become its directories .tmp and .shm (initproc.NSConfig.TmpIn),
// so the disk limit covers them; for quotaInit the init mounts the home
// and makes them, for a host-mounted home (quotaHost) they are made here,
// owned by the sandbox uid.
func (s *nsScratch) quotaView(ns *nsConfig, q diskQuota, size int64, uid, gid uint32) error {
	switch {
	case q == quotaInit:
		ns.Home = &initproc.HomeQuota{Path: s.path, Size: size}
	case q == quotaHost && s.quota:
		for _, d := range initproc.TmpInDirs() {
			p := s.path + "/" + d
			if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return &SetupError{Step: stepDiskQuota, Path: p, Err: err}
			}
			if err := os.Lchown(p, int(uid), int(gid)); err != nil {
				return &SetupError{Step: stepDiskQuota, Path: p, Err: err}
			}
		}
	default:
		return nil
	}
	ns.TmpIn = s.path
	return nil
}

// warmQuota bounds a warm sandbox's fresh home on the host with the
// runner's default limit (a root worker; resized to the task's own limit
// by prepare). An unprivileged worker's homes are bounded by their init,
// which warm sandboxes cannot do (the task's files come after the view):
// its namespace-mode runs start cold (runNamespace).
func (r *Runner) warmQuota(s *nsScratch, uid, gid uint32) error {
	if os.Geteuid() != 0 || r.cfg.Defaults.Disk <= 0 {
		return nil
	}
	return s.mountQuota(r.cfg.Defaults.Disk, uid, gid)
}

// warmBoundable says whether warm sandboxes can serve runs with the
// default disk limit: not an unprivileged Landlock-only runner's (those
// runs are refused), so it prestarts none rather than keep sandboxes no
// run takes.
func (r *Runner) warmBoundable() bool {
	return r.cfg.Defaults.Disk <= 0 || os.Geteuid() == 0 || r.cfg.Isolation != IsolationLandlock
}

// finishHome completes res from the home before teardown: whether the
// disk limit was hit, and the caller's Spec.Finished with the home's host
// directory.
func finishHome(spec Spec, home nsScratch, res *Result) {
	if home.quota {
		res.DiskFull = diskFull(home.path)
	}
	if spec.Finished != nil {
		spec.Finished(home.path)
	}
}

// launchInitQuota is launchInit for a home its init bounds (quotaInit):
// the init builds the view, the home's tmpfs included, and waits
// (Config.Prepare); the worker opens the home through /proc/<init>/root
// (nothing of the task runs yet: no link in it was planted), writes the
// task's files, then sends the task. The O_PATH descriptor it holds pins
// the tmpfs after the namespace is gone, so Result.DiskFull and
// Spec.Finished see the home as the task left it; the tmpfs is freed when
// it is closed, on return.
func (r *Runner) launchInitQuota(ctx context.Context, l initLaunch, ns *nsConfig, scratch string, uid, gid uint32) (*Result, error) {
	runtime.LockOSThread() // Pdeathsig: see launchInit
	defer runtime.UnlockOSThread()
	s, err := startInit(r.init, l.attr, l.cgroup.v2Dir(), l.spec.Stdin, l.spec.Stdout, l.spec.Stderr)
	if err != nil {
		return nil, err
	}
	defer s.close()
	fail := func(err error) (*Result, error) {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		return nil, err
	}
	if err := s.prepare(l.cgroup, ns, l.cfg.Landlock); err != nil {
		return fail(err)
	}
	home, err := openHeldHome(s.cmd.Process.Pid, scratch)
	if err != nil {
		return fail(err)
	}
	defer home.close()
	if err := home.s.fill(l.spec, uid, gid); err != nil {
		return fail(err)
	}
	res, err := s.finish(ctx, l)
	if err != nil {
		return nil, err
	}
	finishHome(l.spec, home.s, res)
	return res, nil
}

// heldHome is a home its init mounted (quotaInit), reached through an
// O_PATH descriptor of it that the worker holds: s.path is
// /proc/self/fd/<fd>/. ("/." follows the descriptor's magic link, which
// O_NOFOLLOW users such as sandbox/files would otherwise refuse).
type heldHome struct {
	fd int
	s  nsScratch
}

// openHeldHome opens the home at path (as the view sees it) of the init
// pid, which has built its view and waits: nothing of the task has run,
// so no link in the path was planted.
func openHeldHome(pid int, path string) (*heldHome, error) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root"+path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &SetupError{Step: "open home", Path: path, Err: err}
	}
	return &heldHome{fd: fd, s: nsScratch{path: "/proc/self/fd/" + strconv.Itoa(fd) + "/.", quota: true, undo: func() error { return nil }}}, nil
}

// close releases the home; its tmpfs is freed once its namespace is gone
// too. Nil-safe.
func (h *heldHome) close() {
	if h != nil && h.fd >= 0 {
		_ = unix.Close(h.fd)
		h.fd = -1
	}
}

// warmHome is the home a warm sandbox's task files and Spec.Finished use:
// the held one when its init mounted it, else the host directory.
func (w *warmSandbox) warmHome() nsScratch {
	if w.held != nil {
		return w.held.s
	}
	return w.scratch
}

// warmDiskQuota is how a warm sandbox's home is bounded: by a root worker
// on the host (resized per task), by an unprivileged one's init at the
// default limit, or not at all.
func (r *Runner) warmDiskQuota() diskQuota {
	switch {
	case r.cfg.Defaults.Disk <= 0:
		return quotaNone
	case os.Geteuid() == 0:
		return quotaHost
	default:
		return quotaInit
	}
}

// warmServes says whether a warm sandbox can serve a run bounded as q: a
// host-mounted home is resized to any limit; an init-mounted one keeps
// the default size, so it serves only runs with that limit, and an
// unbounded one only unbounded runs.
func (r *Runner) warmServes(q diskQuota, spec Spec) bool {
	switch r.warmDiskQuota() {
	case quotaInit:
		return q == quotaInit && spec.Limits.Disk == r.cfg.Defaults.Disk
	case quotaNone:
		return q != quotaInit
	}
	return true
}
