package initproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NSConfig is the namespace phase of the init: the allow-list view it
// builds and the uts/net setup. Paths are absolute; sources were resolved
// (no symlinks left) by the worker and are opened with RESOLVE_NO_SYMLINKS,
// so a component swapped for a symlink since then fails the run.
type NSConfig struct {
	Binds    []Bind    `json:"binds"`
	Symlinks []Symlink `json:"symlinks,omitempty"`
	TmpSize  int64     `json:"tmp_size"` // bytes, /tmp
	ShmSize  int64     `json:"shm_size"` // bytes, /dev/shm
	Hostname string    `json:"hostname"`
	Loopback bool      `json:"loopback"` // bring lo up
	// Home, when set, bounds the home with a tmpfs mounted by the init
	// (home_quota.go).
	Home *HomeQuota `json:"home,omitempty"`
	// TmpIn, when set, is the home whose directories .tmp and .shm are
	// bound at /tmp and /dev/shm (nosuid, nodev, noexec) instead of fresh
	// tmpfs of TmpSize and ShmSize: a bounded home (a size-capped tmpfs),
	// so its disk limit covers them too, or a home asked to keep what the
	// run writes there (sandbox.Spec.TmpInHome).
	TmpIn string `json:"tmp_in,omitempty"`
	// Hide are directories inside the binds, each covered, after every
	// other mount of the view, with an empty read-only tmpfs (hide.go).
	Hide []string `json:"hide,omitempty"`
}

// Bind binds Source at the same path inside, read-only unless Writable.
type Bind struct {
	Source   string `json:"source"`
	Writable bool   `json:"writable,omitempty"`
}

// Symlink creates Path -> Target inside the view.
type Symlink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// ViewDevices are bound from the host /dev; nothing else of /dev exists.
// They are also the only devices the Landlock policy allows, in every
// mode (the worker's sandboxDevices). Deliberately no /dev/tty (TIOCSTI)
// and no host /dev/shm (host-shared).
var ViewDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// newRootMount is where the fresh root tmpfs is mounted before pivot_root.
// Any existing directory works: sources are opened before it is covered.
const newRootMount = "/tmp"

const (
	openPathFlags = unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW
	resolveStrict = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
)

type openedSource struct {
	fd    int
	flags uintptr // mount flags the kernel locks in a user namespace
	dir   bool
}

func setupNamespace(ns *NSConfig) error {
	// Nothing below may propagate to the host's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(StepMakePrivate, "/", err)
	}
	if ns.Home != nil {
		if err := mountHomeQuota(ns.Home); err != nil {
			return err
		}
	}
	srcs := make([]openedSource, len(ns.Binds))
	for i, b := range ns.Binds {
		s, err := openSource(b.Source)
		if err != nil {
			return fail("open bind source", b.Source, err)
		}
		srcs[i] = s
	}
	devs := make([]openedSource, len(ViewDevices))
	for i, d := range ViewDevices {
		s, err := openSource(d)
		if err != nil {
			return fail("open device", d, err)
		}
		devs[i] = s
	}
	tmpSrcs, err := openTmpIn(ns.TmpIn)
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", newRootMount, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"); err != nil {
		return fail("mount root tmpfs", newRootMount, err)
	}
	root, err := unix.Open(newRootMount, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open new root", newRootMount, err)
	}
	// /tmp first: the scratch directory (and a toolchain) may live under
	// the host's /tmp and is then bound on top of the private one.
	// /tmp and /dev/shm are the sandbox's own, like its home: programs it
	// writes there may run (a compiler's output, a venv's interpreter),
	// never as setuid or through a device node.
	tmpfsFlags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if tmpSrcs != nil {
		if err := bindTmp(root, tmpSrcs[0], "/tmp"); err != nil {
			return fail("bind /tmp", ns.TmpIn+"/"+tmpInDirs[0], err)
		}
	} else if err := mountFresh(root, "/tmp", "tmpfs", tmpfsFlags, fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", ns.TmpSize, TmpfsInodes(ns.TmpSize))); err != nil {
		return fail("mount /tmp", "/tmp", err)
	}
	if err := bindAndLink(root, srcs, ns.Binds, ns.Symlinks); err != nil {
		return err
	}
	for i, d := range ViewDevices {
		if err := bindInto(root, devs[i], d, true); err != nil {
			return fail("bind device", d, err)
		}
	}
	for _, l := range []Symlink{{"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"}, {"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"}} {
		if err := makeSymlink(root, l); err != nil {
			return fail("symlink", l.Path, err)
		}
	}
	if tmpSrcs != nil {
		if err := bindTmp(root, tmpSrcs[1], "/dev/shm"); err != nil {
			return fail("bind /dev/shm", ns.TmpIn+"/"+tmpInDirs[1], err)
		}
	} else if err := mountFresh(root, "/dev/shm", "tmpfs", tmpfsFlags, fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", ns.ShmSize, TmpfsInodes(ns.ShmSize))); err != nil {
		return fail("mount /dev/shm", "/dev/shm", err)
	}
	if err := mountFresh(root, "/proc", "proc", uintptr(unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC), ""); err != nil {
		return fail("mount /proc", "/proc", err)
	}
	if err := hideAll(root, ns.Hide); err != nil {
		return err
	}
	// No nested user namespaces: they would put the kernel's namespace
	// code (a common source of privilege escalations) in reach again.
	if err := os.WriteFile(fdPath(root)+"/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
		return fail("disable nested user namespaces", "/proc/sys/user/max_user_namespaces", err)
	}
	if err := boundUserCounts(fdPath(root) + "/proc/sys/user/"); err != nil {
		return err
	}
	if err := unix.Sethostname([]byte(ns.Hostname)); err != nil {
		return fail("sethostname", "", err)
	}
	if ns.Loopback {
		if err := loopbackUp(); err != nil {
			return fail("loopback up", "lo", err)
		}
	}
	if err := unix.Mount("", newRootMount, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fail("remount root read-only", "/", err)
	}
	if err := pivot(root); err != nil {
		return err
	}
	for _, s := range append(append(srcs, devs...), tmpSrcs...) {
		_ = unix.Close(s.fd)
	}
	_ = unix.Close(root)
	return nil
}

// bindAndLink binds each opened source at its bind's path under root,
// then makes the symlinks: after the binds, since a link under a bound
// directory is the host's own.
func bindAndLink(root int, srcs []openedSource, binds []Bind, links []Symlink) error {
	for i, b := range binds {
		if err := bindInto(root, srcs[i], b.Source, b.Writable); err != nil {
			return fail("bind", b.Source, err)
		}
	}
	for _, l := range links {
		if err := makeSymlink(root, l); err != nil {
			return fail("symlink", l.Path, err)
		}
	}
	return nil
}

// pivot makes the new root "/" and detaches the old one entirely.
func pivot(root int) error {
	if err := unix.Fchdir(root); err != nil {
		return fail("pivot_root", "chdir", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fail("pivot_root", "", err)
	}
	// The old root is now stacked on "."; detach it.
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fail("detach old root", "", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fail("pivot_root", "chdir /", err)
	}
	return nil
}

func openSource(path string) (openedSource, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: openPathFlags, Resolve: resolveStrict})
	if err != nil {
		return openedSource{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return openedSource{}, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// O_PATH|O_NOFOLLOW opens a trailing symlink itself: refuse it.
		_ = unix.Close(fd)
		return openedSource{}, unix.ELOOP
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		_ = unix.Close(fd)
		return openedSource{}, err
	}
	return openedSource{fd: fd, flags: lockedFlags(sfs.Flags), dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, nil
}

// lockedFlags are the per-mount flags a remount inside a user namespace
// must keep (the kernel refuses to clear them with EPERM).
func lockedFlags(st int64) uintptr {
	var f uintptr
	for _, m := range []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
		{unix.ST_RDONLY, unix.MS_RDONLY},
	} {
		if st&m.st != 0 {
			f |= m.ms
		}
	}
	return f
}

// bindInto binds the opened source at the same path under root. Binds are
// not recursive: a mount nested under a source is not carried into the
// view (the kernel refuses such a source, which fails the run closed).
func bindInto(root int, src openedSource, path string, writable bool) error {
	target, err := makeTarget(root, path, src.dir)
	if err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	defer unix.Close(target)
	tpath := fdPath(target)
	if err := unix.Mount(fdPath(src.fd), tpath, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	if isDevice(path) {
		return nil // devices keep the source's flags: no nodev, writable
	}
	flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOSUID|unix.MS_NODEV) | src.flags
	if !writable {
		flags |= unix.MS_RDONLY
	}
	// The mount point fd still names the directory under the new mount;
	// remount by path through the root fd instead.
	if err := unix.Mount("", fdPath(root)+path, "", flags, ""); err != nil {
		return fmt.Errorf("remount: %w", err)
	}
	return nil
}

func isDevice(path string) bool { return strings.HasPrefix(path, "/dev/") }

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// makeTarget creates path (a directory, or an empty file) under root,
// never following a symlink, and returns an O_PATH fd of it.
func makeTarget(root int, path string, dir bool) (int, error) {
	parent, err := mkdirAllAt(root, filepath.Dir(path))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	name := filepath.Base(path)
	if dir {
		if err := unix.Mkdirat(parent, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
	} else {
		fd, err := unix.Openat(parent, name, unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
		if err == nil {
			_ = unix.Close(fd)
		}
	}
	return unix.Openat2(parent, name, &unix.OpenHow{Flags: openPathFlags, Resolve: resolveStrict | unix.RESOLVE_BENEATH})
}

// mkdirAllAt creates dir under root component by component without
// following symlinks and returns an O_PATH fd of it.
func mkdirAllAt(root int, dir string) (int, error) {
	cur, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		if err := unix.Mkdirat(cur, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.EROFS) {
			_ = unix.Close(cur)
			return -1, err
		}
		next, err := unix.Openat2(cur, c, &unix.OpenHow{Flags: openPathFlags | unix.O_DIRECTORY, Resolve: resolveStrict | unix.RESOLVE_BENEATH})
		_ = unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

func makeSymlink(root int, l Symlink) error {
	parent, err := mkdirAllAt(root, filepath.Dir(l.Path))
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	err = unix.Symlinkat(l.Target, parent, filepath.Base(l.Path))
	if errors.Is(err, unix.EROFS) || errors.Is(err, unix.EEXIST) {
		// Inside a read-only bind: the host's own entry is what the view
		// shows there.
		return nil
	}
	return err
}

func mountFresh(root int, path, fstype string, flags uintptr, data string) error {
	target, err := makeTarget(root, path, true)
	if err != nil {
		return fmt.Errorf("create mount point: %w", err)
	}
	defer unix.Close(target)
	return unix.Mount(fstype, fdPath(target), fstype, flags, data)
}

// loopbackUp brings lo up in the new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
