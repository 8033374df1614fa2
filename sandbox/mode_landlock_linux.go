package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"github.com/warrenhq/warren/sandbox/internal/ident"
	"golang.org/x/sys/unix"
)

// landlockMode runs a sandbox with Landlock, seccomp and rlimits but no
// namespaces: for hosts that forbid them. The sandbox gets a private 0700
// home under Config.ScratchRoot (the only writable place, TMPDIR inside
// it), a rebuilt environment, NO_NEW_PRIVS and the Landlock-mode policy,
// all applied by the sandbox init before it execs the command. As root the
// run has its own uid from the pool, reused only after a verified teardown;
// as an ordinary user every run shares the worker's uid and only Landlock
// domains separate them (see docs/security.md, "Landlock mode"). IPC is
// private: an IPC namespace of its own as root, else refused by seccomp
// (landlockOwnIPC).
type landlockMode struct{}

func (landlockMode) isolation() Isolation { return IsolationLandlock }

// templated: no namespaces to fork a task into, so each warm sandbox serves
// one task.
func (landlockMode) templated() bool { return false }

func (landlockMode) validate(r *Runner, spec Spec) error {
	if err := validateSpec(spec); err != nil {
		return err
	}
	if err := validateHidden(spec, r.cfg.ScratchRoot); err != nil {
		return err
	}
	if err := landlockABI().require(r.cfg.LandlockMinABI); err != nil {
		return &SetupError{Step: "landlock abi", Err: err}
	}
	for _, p := range spec.ReadOnly {
		if _, err := os.Stat(p); err != nil {
			return &SetupError{Step: "read-only path", Path: p, Err: err}
		}
	}
	if r.pool == nil {
		// An ordinary-user worker: its runs' leftovers must come to it.
		if err := becomeSubreaper(); err != nil {
			return &SetupError{Step: "subreaper", Err: err}
		}
	}
	return nil
}

// warmKey: the policy depends on the toolchain and hidden paths and the
// network; there is no /tmp size, and /tmp is never the home's.
func (landlockMode) warmKey(spec Spec) warmKey {
	k := newWarmKey(landlockMode{}, spec)
	k.tmpSize = 0
	k.tmpInHome = false
	return k
}

// landlockTmp is the TMPDIR of a Landlock-mode home, inside it (so a
// bounded home's tmpfs covers it).
const landlockTmp = ".tmp"

// prepare makes the TMPDIR inside the home; the init is a plain child,
// in an IPC namespace of its own when the worker can make one
// (landlockOwnIPC), cold and warm alike.
func (landlockMode) prepare(r *Runner, b *box, _ Spec) (launchPlan, error) {
	if err := makeHomeDirs(b.home.path, b.uid, b.gid, landlockTmp); err != nil {
		return launchPlan{}, err
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if r.landlockOwnIPC() {
		attr.Cloneflags = unix.CLONE_NEWIPC
	}
	return launchPlan{attr: attr}, nil
}

// landlockOwnIPC says whether a Landlock-mode run gets an IPC namespace
// of its own: a root worker (the one with a uid pool) can make one
// without a user namespace, unless the host refuses namespaces (a
// container's seccomp profile: ipcNamespaceAllowed). The task's SysV IPC
// and POSIX message queues are then private, and what it made there dies
// with the namespace when its last process leaves. Otherwise (an
// ordinary-user worker, a host that refuses) its tasks' seccomp filter
// refuses those calls instead (landlockView.OwnIPC).
func (r *Runner) landlockOwnIPC() bool { return r.pool != nil && ipcNamespaceAllowed() }

// ipcNamespaceAllowed reports whether this process may make an IPC
// namespace: a thread of its own unshares one, goes back to the one it
// had, and is then discarded (a goroutine that ends locked to its thread
// takes the thread with it; the main thread, which cannot go, keeps the
// IPC namespace it had). Asked once: what the host allows does not change
// under a worker.
var ipcNamespaceAllowed = sync.OnceValue(func() bool {
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is not reused
		own, err := os.Open("/proc/thread-self/ns/ipc")
		if err != nil {
			ok <- false
			return
		}
		defer own.Close()
		allowed := unix.Unshare(unix.CLONE_NEWIPC) == nil
		if allowed {
			_ = unix.Setns(int(own.Fd()), unix.CLONE_NEWIPC)
		}
		ok <- allowed
	}()
	return <-ok
})

// task is the init's config for a Landlock-mode run, with host paths.
// Hidden paths (Spec.Hide) are left out of every rule (hideFromRules).
func (landlockMode) task(r *Runner, spec Spec, b *box) (*initConfig, Layers, error) {
	home := b.home.path
	env, path := splitPath(buildEnv(spec.Env, home, filepath.Join(home, landlockTmp)))
	policy := newLandlockPolicy(landlockView{
		Home:        home,
		Toolchain:   spec.ReadOnly,
		Network:     spec.Network,
		UnixSockets: spec.UnixSockets,
		MinABI:      r.cfg.LandlockMinABI,
		OwnIPC:      r.landlockOwnIPC(),
	})
	hidden, err := resolveHidden(spec, home)
	if err == nil {
		policy.ReadExec, err = hideFromRules(policy.ReadExec, hidden)
	}
	if err == nil {
		policy.ReadOnly, err = hideFromRules(policy.ReadOnly, hidden)
	}
	if err != nil {
		return nil, 0, err
	}
	cfg := &initConfig{
		Argv:     spec.Argv,
		Env:      env,
		Path:     path,
		Dir:      filepath.Join(home, spec.Cwd),
		Rlimits:  rlimits(spec.Limits, r.cgroups),
		Landlock: policy,
	}
	if r.pool != nil {
		cfg.Cred = &initCred{UID: int(b.uid), GID: int(b.gid)}
	}
	// The task keeps its tree's orphans while it runs (orphan_sweep_linux.go).
	cfg.Subreaper = true
	return cfg, layersLandlockOnly, nil
}

// unprivilegedQuota: an unprivileged worker without namespaces cannot
// mount the home's tmpfs, so a bounded run is refused (fail closed).
func (landlockMode) unprivilegedQuota() (diskQuota, error) {
	return quotaNone, &SetupError{Step: stepDiskQuota, Err: ErrDiskQuotaUnavailable}
}

// killTree kills the run's session and what left it (killLeftovers).
func (landlockMode) killTree(r *Runner, b *box) func(*os.Process) {
	return func(p *os.Process) {
		killSession(p)
		r.killLeftovers(b)
	}
}

// hostRefused: a failed Landlock-mode launch is this run's failure as it
// is (the ABI floor was checked by validate).
func (landlockMode) hostRefused(err error) error { return err }

func (landlockMode) teardown(r *Runner, b *box) error {
	return r.landlockTeardown(b.home, b.uid, b.cg)
}

// killSession kills a Landlock-mode run's session: the init made itself
// a session and group leader.
func killSession(p *os.Process) {
	_ = unix.Kill(-p.Pid, unix.SIGKILL)
	_ = p.Kill()
}

// landlockTeardown sweeps the run (by its cgroup, else as root by its
// uid, else the leftovers reparented to the worker), removes the home and,
// as root, returns the uid to the pool only when no live process of it is
// left and the home is gone; otherwise the uid is quarantined. Zombies do
// not count: they are dead and only wait for a parent to reap them.
func (r *Runner) landlockTeardown(home scratchDir, uid uint32, cg *cgroup.Group) error {
	var errs []error
	// A clean sweep leaves no process of uid, and nothing can start one
	// but the worker: the teardown check need not look again. With a
	// cgroup the sweep is by cgroup (every process of the run is in it);
	// without one, by uid over /proc.
	swept := false
	switch {
	case cg != nil:
		if err := cg.Sweep(); err != nil {
			errs = append(errs, err)
		} else {
			swept = true
		}
	case r.pool != nil:
		if err := landlockSweepUID(uid); err != nil {
			errs = append(errs, err)
		} else {
			swept = true
		}
	default:
		// The worker's own uid, no cgroup: the task's leftovers are the
		// worker's children now (orphan_sweep_linux.go).
		if err := sweepOrphans(); err != nil {
			errs = append(errs, err)
		}
	}
	if r.pool != nil {
		// What the sweep killed may include the worker's own children
		// (CLONE_PARENT siblings of the task): reaped, not left as zombies.
		reapDeadOrphans()
	}
	if home.path != "" {
		if err := home.cleanup(); err != nil {
			errs = append(errs, err)
		}
	}
	if r.pool != nil {
		errs = append(errs, r.pool.Release(uid, func(uid uint32) error {
			if !swept {
				return fmt.Errorf("processes of uid %d survived the sweep", uid)
			}
			if home.owned {
				if _, err := os.Lstat(home.path); !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("home %s not removed", home.path)
				}
			}
			return nil
		}))
	}
	if err := cg.Remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// landlockSweepTimeout bounds the uid sweep; a uid still busy after it is
// quarantined by the pool's teardown check. Nothing escapes the kill
// itself (ident.KillAll): this is for a killed process that is slow to
// die (in the kernel), not for one that keeps ahead of the sweep.
const landlockSweepTimeout = time.Second

// landlockSweepUID SIGKILLs every process of uid at once (ident.KillAll:
// setsid escapees, deep chains and processes that change their pid by
// forking included) until /proc shows none live or the timeout passes;
// zombies are dead already and only wait for their parent. Only
// meaningful for a dedicated pool uid: never call it with the worker's
// own uid.
func landlockSweepUID(uid uint32) error {
	if uid == uint32(os.Getuid()) {
		return errors.New("refusing to sweep the worker's own uid")
	}
	deadline := time.Now().Add(landlockSweepTimeout)
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		live, zombies, err := ident.Processes(uid)
		if err != nil {
			return err
		}
		if len(live) == 0 && (len(zombies) == 0 || time.Now().After(deadline)) {
			return nil
		}
		if err := ident.KillAll(uid); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of uid %d survive the sweep: %v", uid, live)
		}
		// A killed process takes a moment to die and be reaped.
		time.Sleep(backoff)
	}
}
