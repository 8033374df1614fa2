package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nsState is what a Runner remembers about namespace mode.
type nsState struct {
	once    sync.Once
	cgroups cgroupSupport
	pool    *uidPool // nil when the worker is not root
	// noLayer leaves the Landlock layer off, so tests prove the namespace
	// layer's own properties (the layer is proven by its own tests).
	noLayer atomic.Bool

	warm warmState // warm sandboxes (init_warm.go)
}

func (r *Runner) nsInit() {
	r.ns.once.Do(func() {
		r.ns.cgroups = detectCgroups()
		if os.Geteuid() == 0 {
			r.ns.pool = sharedUIDPool(r.cfg.UIDBase, r.cfg.UIDCount)
		}
		r.sweepStale()
		r.startWarm()
	})
}

// nsCloneFlags are the namespaces every namespace-mode sandbox gets.
const nsCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// initCaps are the capabilities (inside the new user namespace only) the
// init keeps across its own exec, as ambient caps, to build the view. It
// drops all of them before executing the task.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE}

// systemEtc are the /etc files a dynamically linked program needs.
var systemEtc = []string{"ld.so.cache", "ld.so.conf", "nsswitch.conf", "passwd", "group", "localtime", "hosts"}

// runIsolated runs spec in the requested isolated mode.
func (r *Runner) runIsolated(ctx context.Context, spec Spec, iso Isolation) (*Result, error) {
	switch iso {
	case IsolationNamespace:
		return r.runNamespace(ctx, spec)
	case IsolationLandlock:
		return r.runLandlock(ctx, spec)
	default:
		return r.runAuto(ctx, spec)
	}
}

// runNamespace runs spec in fresh user, mount, pid, net, ipc, uts and cgroup
// namespaces with an allow-list root.
func (r *Runner) runNamespace(ctx context.Context, spec Spec) (res *Result, err error) {
	r.nsInit()
	if err := validateNSSpec(spec); err != nil {
		return nil, err
	}
	q, err := diskQuotaFor(spec, false)
	if err != nil {
		return nil, err
	}
	if r.warmServes(q, spec) {
		w, refill := r.takeWarm(spec, warmKeyOf(spec))
		defer refill()
		if w != nil {
			return r.runWarm(ctx, spec, w)
		}
	}
	uid, gid, err := r.acquireIdentity()
	if err != nil {
		return nil, err
	}
	scratch, err := r.nsScratch(spec, q, uid, gid)
	if err != nil {
		_ = r.releaseUID(uid, "", nil)
		return nil, err
	}
	var cg *runCgroup
	defer func() {
		terr := r.teardown(scratch, uid, cg)
		if terr != nil && err == nil {
			r.log.Error().Err(terr).Uint32("uid", uid).Msg("sandbox teardown failed")
		}
	}()

	ns, err := planView(spec, scratch.path)
	if err != nil {
		return nil, err
	}
	if err := scratch.quotaView(ns, q, spec.Limits.Disk, uid, gid); err != nil {
		return nil, err
	}
	cg, err = r.ns.cgroups.create(cgroupName(scratch, uid), spec.Limits.Memory, spec.Limits.Processes)
	if err != nil {
		return nil, &SetupError{Step: "create cgroup", Err: err}
	}
	cfg, layer := r.taskConfig(spec, scratch.path)
	l := initLaunch{cfg: cfg, attr: nsAttr(uid, gid, r.ns.pool != nil), cgroup: cg, spec: spec}
	if q == quotaInit {
		res, err = r.launchInitQuota(ctx, l, ns, scratch.path, uid, gid)
	} else {
		cfg.NS = ns
		if res, err = r.launchInit(ctx, l); err == nil {
			finishHome(spec, scratch, res)
		}
	}
	if err != nil {
		return nil, refusedByHost(err)
	}
	res.InForce = "namespace" + layer
	res.ResourceLimits = r.ns.cgroups.String()
	return res, nil
}

// runWarm runs spec in a warm sandbox whose view is built already: only
// the task's files, its cgroup limits and the task phase of the init are
// left. A failure discards the sandbox; the task never ran in it.
func (r *Runner) runWarm(ctx context.Context, spec Spec, w *warmSandbox) (*Result, error) {
	if err := w.prepare(spec); err != nil {
		return nil, err
	}
	cfg, layer := r.taskConfig(spec, w.scratch.path)
	res, err := w.run(ctx, initLaunch{cfg: cfg, cgroup: w.cg, spec: spec})
	if err != nil {
		return nil, err
	}
	res.InForce = "namespace" + layer
	res.ResourceLimits = r.ns.cgroups.String()
	return res, nil
}

// taskConfig is the task phase of a namespace-mode init: command,
// environment, working directory, rlimits and (unless off) the Landlock
// layer, with paths as seen inside the view. layer is what the Landlock
// layer adds to Result.InForce.
func (r *Runner) taskConfig(spec Spec, scratch string) (cfg *initConfig, layer string) {
	env, path := splitPath(buildEnv(spec.Env, scratch, "/tmp"))
	cfg = &initConfig{
		Argv:    spec.Argv,
		Env:     env,
		Path:    path,
		Dir:     filepath.Join(scratch, spec.Cwd),
		Rlimits: r.rlimits(spec.Limits),
	}
	// The Landlock layer (nil below the configured ABI floor), applied by
	// the init after the view is built, with paths as seen inside it.
	if !r.ns.noLayer.Load() {
		cfg.Landlock, layer = r.layeredLandlock(spec, scratch)
	}
	return cfg, layer
}

// nsAttr clones the init into new namespaces with uid/gid mapped 1:1. A
// root worker (dedicated) also switches to them, with no supplementary
// groups (root's would keep host group access).
func nsAttr(uid, gid uint32, dedicated bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags:  nsCloneFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: int(uid), HostID: int(uid), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: int(gid), HostID: int(gid), Size: 1}},
		AmbientCaps: initCaps,
		Pdeathsig:   syscall.SIGKILL,
	}
	if dedicated {
		attr.GidMappingsEnableSetgroups = true
		attr.Credential = &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
	}
	return attr
}

// acquireIdentity returns the uid and gid a run executes as: a dedicated
// uid from the pool when the worker is root, else the worker's own.
func (r *Runner) acquireIdentity() (uid, gid uint32, err error) {
	if r.ns.pool == nil {
		return uint32(os.Getuid()), uint32(os.Getgid()), nil
	}
	u, err := r.ns.pool.acquire()
	if err != nil {
		return 0, 0, &SetupError{Step: "acquire sandbox uid", Err: err}
	}
	return u, u, nil
}

func validateNSSpec(spec Spec) error {
	if spec.Cwd != "" && !filepath.IsLocal(spec.Cwd) {
		return fmt.Errorf("%w: Cwd %q must be a relative path inside the scratch directory", ErrInvalidSpec, spec.Cwd)
	}
	for _, p := range spec.ReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%w: read-only path %q must be absolute", ErrInvalidSpec, p)
		}
	}
	switch spec.Network {
	case "", NetworkNone, NetworkLoopback:
	default:
		return fmt.Errorf("%w: network %q is not none or loopback", ErrInvalidSpec, spec.Network)
	}
	return nil
}

// planView lists what the init binds into the new root.
func planView(spec Spec, scratch string) (*nsConfig, error) {
	ns := &nsConfig{
		TmpSize:  spec.Limits.TmpSize,
		ShmSize:  spec.Limits.TmpSize,
		Hostname: "warren",
		Loopback: spec.Network == NetworkLoopback,
		Binds:    []bindMount{{Source: "/usr"}},
	}
	for _, p := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		addSystemPath(ns, p)
	}
	for _, f := range systemEtc {
		addSystemPath(ns, "/etc/"+f)
	}
	for _, p := range spec.ReadOnly {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, &SetupError{Step: "resolve read-only path", Path: p, Err: err}
		}
		if real == "/" || isUnder(real, "/proc") || isUnder(real, "/dev") {
			return nil, fmt.Errorf("%w: read-only path %q resolves to %q, which cannot be shared", ErrInvalidSpec, p, real)
		}
		ns.Binds = append(ns.Binds, bindMount{Source: real})
		if c := filepath.Clean(p); c != real {
			// A symlinked toolchain path stays usable under its own name.
			ns.Symlinks = append(ns.Symlinks, symlink{Path: c, Target: real})
		}
	}
	ns.Binds = append(ns.Binds, bindMount{Source: scratch, Writable: true})
	// Parents before children, so a nested bind lands on top.
	sort.SliceStable(ns.Binds, func(i, j int) bool {
		return strings.Count(ns.Binds[i].Source, "/") < strings.Count(ns.Binds[j].Source, "/")
	})
	return ns, nil
}

// addSystemPath mirrors a system path: a symlink as the same symlink, a
// directory or file as a read-only bind, nothing when missing.
func addSystemPath(ns *nsConfig, p string) {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
	case fi.Mode()&os.ModeSymlink != 0:
		if t, err := os.Readlink(p); err == nil {
			ns.Symlinks = append(ns.Symlinks, symlink{Path: p, Target: t})
		}
	default:
		ns.Binds = append(ns.Binds, bindMount{Source: p})
	}
}

func isUnder(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// rlimits are the command's rlimits, set by the init just before execve.
// Memory is bounded by the run's cgroup where the runner has cgroups (the
// whole tree, resident memory): RLIMIT_AS is then left alone, since it
// would also cap address space that runtimes reserve without using (a Go
// program reserves ~1 GB at start). Without cgroups RLIMIT_AS is the only
// memory bound.
func (r *Runner) rlimits(l Limits) []initRlimit {
	rl := limitsToRlimits(l)
	if r.ns.cgroups.Version == 0 {
		return rl
	}
	return slices.DeleteFunc(rl, func(x initRlimit) bool { return x.Resource == unix.RLIMIT_AS })
}

// cpuSeconds is the CPU limit as RLIMIT_CPU's soft limit: whole seconds,
// rounded up.
func cpuSeconds(d time.Duration) uint64 { return uint64((d + time.Second - 1) / time.Second) }

func limitsToRlimits(l Limits) []initRlimit {
	cpu := cpuSeconds(l.CPU)
	return []initRlimit{
		{Resource: unix.RLIMIT_AS, Cur: uint64(l.Memory), Max: uint64(l.Memory)},
		{Resource: unix.RLIMIT_NPROC, Cur: uint64(l.Processes), Max: uint64(l.Processes)},
		{Resource: unix.RLIMIT_NOFILE, Cur: uint64(l.OpenFiles), Max: uint64(l.OpenFiles)},
		{Resource: unix.RLIMIT_FSIZE, Cur: uint64(l.FileSize), Max: uint64(l.FileSize)},
		// SIGXCPU at the limit, SIGKILL a second later.
		{Resource: unix.RLIMIT_CPU, Cur: cpu, Max: cpu + 1},
	}
}

// teardown removes what the run left on the host and returns the uid to
// the pool once nothing of it is alive.
func (r *Runner) teardown(scratch nsScratch, uid uint32, cg *runCgroup) error {
	var errs []error
	if err := scratch.cleanup(); err != nil {
		errs = append(errs, err)
	}
	owned := ""
	if scratch.owned {
		owned = scratch.path
	}
	if err := r.releaseUID(uid, owned, cg); err != nil {
		errs = append(errs, err)
	}
	if err := cg.remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// releaseUID verifies that no process of uid is alive (and that the scratch
// directory is gone) before the pool may hand uid out again.
func (r *Runner) releaseUID(uid uint32, scratch string, cg *runCgroup) error {
	if r.ns.pool == nil {
		return nil
	}
	return r.ns.pool.release(uid, func(uid uint32) error {
		// Every process of the run is in its cgroup (it cannot leave: the
		// cgroup fs is not in its view), so an empty cgroup proves they are
		// gone; without one, scan /proc for live processes of the uid
		// (zombies are dead: they only wait for a parent to reap them).
		// The kernel finishes killing a pid namespace just after its init
		// is reaped: allow it a moment.
		var err error
		deadline := time.Now().Add(releaseGrace)
		for backoff := 100 * time.Microsecond; ; backoff = min(2*backoff, 20*time.Millisecond) {
			err = nil
			if cg != nil {
				if !cg.empty() {
					err = errors.New("processes left in the run's cgroup")
				}
			} else if pids, perr := livePIDsOfUID(uid); perr != nil {
				err = perr
			} else if len(pids) > 0 {
				err = fmt.Errorf("processes of uid %d still alive: %v", uid, pids)
			}
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(backoff)
		}
		if err != nil {
			return err
		}
		if scratch == "" {
			return nil // not ours to remove (or never created)
		}
		if _, err := os.Lstat(scratch); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("scratch %s not removed", scratch)
		}
		return nil
	})
}

// releaseGrace bounds how long a teardown check waits for the processes
// of a finished run to be gone before the uid is quarantined.
const releaseGrace = time.Second

// stepMakePrivate is the init's first step inside its new namespaces
// (initproc's setupNamespace).
const stepMakePrivate = "make mounts private"

// refusedByHost types err as ErrUnavailable (so auto falls back to the
// Landlock mode) when it shows the host refusing the namespace mode itself,
// not a problem of this run: the clone of the init refused (a container's
// seccomp profile, a sysctl), or the very first mount inside the fresh
// namespaces refused with EPERM/EACCES (Ubuntu's AppArmor restriction of
// unprivileged user namespaces creates them without the capabilities to
// mount; nothing of the run's own view is involved yet).
func refusedByHost(err error) error {
	var se *SetupError
	if !errors.As(err, &se) || errors.Is(err, ErrUnavailable) {
		return err
	}
	denied := errors.Is(se.Err, unix.EPERM) || errors.Is(se.Err, unix.EACCES)
	if se.Step == stepStartInit || (se.Step == stepMakePrivate && denied) {
		se.Err = fmt.Errorf("%w: %w", ErrUnavailable, se.Err)
	}
	return err
}
