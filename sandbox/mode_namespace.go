package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/initproc"
	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"github.com/warrenhq/warren/sandbox/internal/ident"
	"golang.org/x/sys/unix"
)

// namespaceMode runs a sandbox in fresh user, mount, pid, net, ipc, uts
// and cgroup namespaces with an allow-list root (the view the init
// builds), and the Landlock layer on top unless the host's ABI is below
// Config.LandlockMinABI.
type namespaceMode struct{}

func (namespaceMode) isolation() Isolation { return IsolationNamespace }

func (namespaceMode) validate(r *Runner, spec Spec) error {
	if err := validateSpec(spec); err != nil {
		return err
	}
	return validateHidden(spec, r.cfg.ScratchRoot)
}

func (namespaceMode) warmKey(spec Spec) warmKey { return newWarmKey(namespaceMode{}, spec) }

// unprivilegedQuota: the init, root in its user namespace, mounts the
// home's tmpfs in its own mount namespace.
func (namespaceMode) unprivilegedQuota() (diskQuota, error) { return quotaInit, nil }

func (namespaceMode) prepare(r *Runner, b *box, spec Spec) (launchPlan, error) {
	view, err := planView(spec, b.home.path)
	if err != nil {
		return launchPlan{}, err
	}
	if err := boundView(view, b, spec.TmpInHome); err != nil {
		return launchPlan{}, err
	}
	return launchPlan{attr: nsAttr(b.uid, b.gid, r.pool != nil), view: view}, nil
}

// task is the task phase of a namespace-mode init: command, environment,
// working directory, rlimits and (unless off) the Landlock layer, with
// paths as seen inside the view (the home is bound at its host path). A
// hidden path (Spec.Hide) is an empty mount of the view already: the
// Landlock layer needs no rule changed for it.
func (namespaceMode) task(r *Runner, spec Spec, b *box) (*initConfig, Layers, error) {
	scratch := b.home.path
	env, path := splitPath(buildEnv(spec.Env, scratch, "/tmp"))
	cfg := &initConfig{
		Argv:    spec.Argv,
		Env:     env,
		Path:    path,
		Dir:     filepath.Join(scratch, spec.Cwd),
		Rlimits: rlimits(spec.Limits, r.cgroups),
	}
	layers := LayerNamespace
	// The Landlock layer (nil below the configured ABI floor), applied by
	// the init after the view is built, with paths as seen inside it.
	if r.layered() {
		if cfg.Landlock = r.layeredLandlock(spec, scratch); cfg.Landlock != nil {
			layers |= LayerLandlock | LayerSeccomp
		}
	}
	return cfg, layers, nil
}

// templated: a task's own pid, IPC and mount namespaces, forked by the
// template, give it everything else fresh (template.go).
func (namespaceMode) templated() bool { return true }

// killTree: killing the init takes the whole pid namespace with it.
func (namespaceMode) killTree(*Runner, *box) func(*os.Process) { return nil }

func (namespaceMode) hostRefused(err error) error { return refusedByHost(err) }

// teardown removes what the run left on the host and returns the uid to
// the pool once nothing of it is alive.
func (namespaceMode) teardown(r *Runner, b *box) error {
	var errs []error
	if err := b.home.cleanup(); err != nil {
		errs = append(errs, err)
	}
	owned := ""
	if b.home.owned {
		owned = b.home.path
	}
	if err := r.releaseUID(b.uid, owned, b.cg); err != nil {
		errs = append(errs, err)
	}
	if err := b.cg.Remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// nsCloneFlags are the namespaces every namespace-mode sandbox gets.
const nsCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// initCaps are the capabilities (inside the new user namespace only) the
// init keeps across its own exec, as ambient caps, to build the view. It
// drops all of them before executing the task.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE}

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

// planView lists what the init binds into the new root, and the hidden
// paths (Spec.Hide, resolved) it covers with empty mounts after them.
func planView(spec Spec, scratch string) (*nsConfig, error) {
	ns := &nsConfig{
		TmpSize:  spec.Limits.TmpSize,
		ShmSize:  spec.Limits.TmpSize,
		Hostname: "warren",
		Loopback: spec.Network == NetworkLoopback,
		Binds:    []bindMount{{Source: "/usr"}},
	}
	for _, p := range systemDirs(IsolationNamespace) {
		if p != "/usr" { // bound above, whatever it is
			addSystemPath(ns, p)
		}
	}
	for _, f := range etcAllowList(IsolationNamespace) {
		addSystemPath(ns, f)
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
	hidden, err := resolveHidden(spec, scratch)
	if err != nil {
		return nil, err
	}
	for _, h := range hidden {
		// Only what a bind shows needs covering; the rest is not in the view.
		if slices.ContainsFunc(ns.Binds, func(b bindMount) bool { return within(h, b.Source) }) {
			ns.Hide = append(ns.Hide, h)
		}
	}
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

// layered says whether namespace-mode runs carry the Landlock and seccomp
// layers on top (the host's ABI is at least Config.LandlockMinABI).
func (r *Runner) layered() bool {
	return !r.noLayer.Load() && landlockABI().require(r.cfg.LandlockMinABI) == nil
}

// layeredLandlock is the Landlock layer of the namespace mode, with paths
// as seen inside the new root: the scratch (bound at its host path), the
// private /tmp and /dev/shm, the toolchain. It returns nil when the
// host's ABI is below Config.LandlockMinABI (the run is then namespace
// only).
func (r *Runner) layeredLandlock(spec Spec, scratchInside string) *landlockPolicy {
	if landlockABI().require(r.cfg.LandlockMinABI) != nil {
		return nil
	}
	return newLandlockPolicy(landlockView{
		Home:        scratchInside,
		Writable:    []string{"/tmp", "/dev/shm"},
		Toolchain:   spec.ReadOnly,
		Network:     spec.Network,
		UnixSockets: spec.UnixSockets,
		MinABI:      r.cfg.LandlockMinABI,
		// / is the private view here: it may be listed; the network and
		// IPC namespaces are the sandbox's own.
		PrivateRoot: true,
		OwnNetwork:  true,
		OwnIPC:      true,
	})
}

// releaseUID verifies that no process of uid is alive (and that the scratch
// directory is gone) before the pool may hand uid out again.
func (r *Runner) releaseUID(uid uint32, scratch string, cg *cgroup.Group) error {
	if r.pool == nil {
		return nil
	}
	return r.pool.Release(uid, func(uid uint32) error {
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
				if !cg.Empty() {
					err = errors.New("processes left in the run's cgroup")
				}
			} else if pids, perr := ident.LivePIDs(uid); perr != nil {
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

// refusedByHost types err as ErrUnavailable (so auto falls back to the
// Landlock mode, and the warm pool stops building namespace sandboxes) when
// it shows the host refusing the namespace mode itself, not a problem of
// this run: the clone of the init refused as a host refuses namespaces
// (EPERM: a container's seccomp profile, a sysctl; ENOSPC: a
// max_*_namespaces limit; EUSERS: the nesting limit), or the very first
// mount inside the fresh namespaces refused with EPERM/EACCES (Ubuntu's
// AppArmor restriction of unprivileged user namespaces creates them
// without the capabilities to mount; nothing of the run's own view is
// involved yet). Any other start failure (EAGAIN, ENOMEM, EMFILE, an exec
// that failed) is this run's: it must not run a task with fewer layers,
// nor turn the namespace warm pool off.
func refusedByHost(err error) error {
	var se *SetupError
	if !errors.As(err, &se) || errors.Is(err, ErrUnavailable) {
		return err
	}
	var refused bool
	switch se.Step {
	case stepStartInit:
		refused = errors.Is(se.Err, unix.EPERM) || errors.Is(se.Err, unix.ENOSPC) || errors.Is(se.Err, unix.EUSERS)
	case string(initproc.StepMakePrivate):
		refused = errors.Is(se.Err, unix.EPERM) || errors.Is(se.Err, unix.EACCES)
	}
	if refused {
		se.Err = fmt.Errorf("%w: %w", ErrUnavailable, se.Err)
	}
	return err
}
