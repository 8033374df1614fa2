package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// inForceLandlock names the layers of the Landlock-only mode in Result.InForce.
const inForceLandlock = "landlock+seccomp"

// runLandlock runs spec with Landlock, seccomp and rlimits but no
// namespaces: for hosts that forbid them. The sandbox gets a private 0700
// home under Config.ScratchRoot (the only writable place, TMPDIR inside
// it), a rebuilt environment, NO_NEW_PRIVS and the Landlock-mode policy,
// all applied by the sandbox init before it execs the command. As root the
// run has its own uid from the pool, reused only after a verified teardown;
// as an ordinary user every run shares the worker's uid and only Landlock
// domains separate them (see docs/security.md, "Landlock mode").
func (r *Runner) runLandlock(ctx context.Context, spec Spec) (res *Result, err error) {
	r.nsInit()
	if err := validateNSSpec(spec); err != nil {
		return nil, err
	}
	if err := landlockABI().require(r.cfg.LandlockMinABI); err != nil {
		return nil, &SetupError{Step: "landlock abi", Err: err}
	}
	for _, p := range spec.ReadOnly {
		if _, err := os.Stat(p); err != nil {
			return nil, &SetupError{Step: "read-only path", Path: p, Err: err}
		}
	}
	if r.ns.pool == nil {
		// An ordinary-user worker: its runs' leftovers must come to it.
		if err := becomeSubreaper(); err != nil {
			return nil, &SetupError{Step: "subreaper", Err: err}
		}
	}
	q, err := diskQuotaFor(spec, true)
	if err != nil {
		return nil, err
	}
	w, refill := r.takeWarm(spec, landlockKeyOf(spec))
	defer refill()
	if w != nil {
		return r.runWarmLandlock(ctx, spec, w)
	}
	uid, gid, err := r.acquireIdentity()
	if err != nil {
		return nil, err
	}
	home, err := r.nsScratch(spec, q, uid, gid)
	if err != nil {
		_ = r.landlockTeardown(nsScratch{}, uid, nil)
		return nil, err
	}
	var cg *runCgroup
	defer func() {
		if terr := r.landlockTeardown(home, uid, cg); terr != nil {
			r.log.Error().Err(terr).Uint32("uid", uid).Msg("landlock sandbox teardown failed")
		}
	}()
	if err := makeLandlockTmp(home.path, uid, gid); err != nil {
		return nil, err
	}
	cg, err = r.ns.cgroups.create("ll-"+filepath.Base(home.path)+"-"+fmt.Sprint(uid), spec.Limits.Memory, spec.Limits.Processes)
	if err != nil {
		return nil, &SetupError{Step: "create cgroup", Err: err}
	}
	res, err = r.launchInit(ctx, initLaunch{
		cfg:      r.landlockTask(spec, home.path, uid, gid),
		attr:     &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		cgroup:   cg,
		spec:     spec,
		killTree: killSession,
	})
	if err != nil {
		return nil, err
	}
	finishHome(spec, home, res)
	res.InForce = inForceLandlock
	res.ResourceLimits = r.ns.cgroups.String()
	return res, nil
}

// runWarmLandlock runs spec in a warm Landlock-mode sandbox: home, TMPDIR
// and cgroup made, the init started and waiting. A failure discards it;
// the task never ran in it.
func (r *Runner) runWarmLandlock(ctx context.Context, spec Spec, w *warmSandbox) (*Result, error) {
	if err := w.prepare(spec); err != nil {
		return nil, err
	}
	res, err := w.run(ctx, initLaunch{cfg: r.landlockTask(spec, w.scratch.path, w.uid, w.gid), cgroup: w.cg, spec: spec, killTree: killSession})
	if err != nil {
		return nil, err
	}
	res.InForce = inForceLandlock
	res.ResourceLimits = r.ns.cgroups.String()
	return res, nil
}

// makeLandlockTmp creates the TMPDIR inside a Landlock-mode home.
func makeLandlockTmp(home string, uid, gid uint32) error {
	tmp := filepath.Join(home, ".tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return &SetupError{Step: "create TMPDIR", Path: tmp, Err: err}
	}
	if err := os.Lchown(tmp, int(uid), int(gid)); err != nil {
		return &SetupError{Step: "chown TMPDIR", Path: tmp, Err: err}
	}
	return nil
}

// landlockTask is the init's config for a Landlock-mode run.
func (r *Runner) landlockTask(spec Spec, home string, uid, gid uint32) *initConfig {
	env, path := splitPath(buildEnv(spec.Env, home, filepath.Join(home, ".tmp")))
	cfg := &initConfig{
		Argv:    spec.Argv,
		Env:     env,
		Path:    path,
		Dir:     filepath.Join(home, spec.Cwd),
		Rlimits: r.rlimits(spec.Limits),
		Landlock: newLandlockPolicy(landlockView{
			Home:        home,
			Toolchain:   spec.ReadOnly,
			Network:     spec.Network,
			UnixSockets: spec.UnixSockets,
			MinABI:      r.cfg.LandlockMinABI,
		}),
	}
	if r.ns.pool != nil {
		cfg.Cred = &initCred{UID: int(uid), GID: int(gid)}
	}
	// The task keeps its tree's orphans while it runs (orphan_sweep_linux.go).
	cfg.Subreaper = true
	return cfg
}

// killSession kills a Landlock-mode run: the init made itself a session
// and group leader; escapees from the group are caught at teardown by the
// cgroup, uid (root) or orphan (ordinary user) sweep.
func killSession(p *os.Process) {
	_ = unix.Kill(-p.Pid, unix.SIGKILL)
	_ = p.Kill()
}

// landlockTeardown sweeps the run (by its cgroup, else as root by its
// uid, else the leftovers reparented to the worker), removes the home and, as root, returns the uid to the pool only
// when no live process of it is left and the home is gone; otherwise the
// uid is quarantined. Zombies do not count:
// they are dead and only wait for a parent to reap them.
func (r *Runner) landlockTeardown(home nsScratch, uid uint32, cg *runCgroup) error {
	var errs []error
	// A clean sweep leaves no process of uid, and nothing can start one
	// but the worker: the teardown check need not look again. With a
	// cgroup the sweep is by cgroup (every process of the run is in it);
	// without one, by uid over /proc.
	swept := false
	switch {
	case cg != nil:
		if err := cg.sweep(); err != nil {
			errs = append(errs, err)
		} else {
			swept = true
		}
	case r.ns.pool != nil:
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
	if home.path != "" {
		if err := home.cleanup(); err != nil {
			errs = append(errs, err)
		}
	}
	if r.ns.pool != nil {
		errs = append(errs, r.ns.pool.release(uid, func(uid uint32) error {
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
	if err := cg.remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// splitPath removes PATH from env and returns it separately (the init
// prunes it to existing directories).
func splitPath(env []string) ([]string, string) {
	path := minimalPath
	out := env[:0:0]
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			path = p
			continue
		}
		out = append(out, e)
	}
	return out, path
}

// landlockSweepTimeout bounds the uid sweep; a uid still busy after it is
// quarantined by the pool's teardown check.
const landlockSweepTimeout = time.Second

// landlockSweepUID SIGKILLs every live process running as uid (setsid
// escapees included) until none is left or the timeout passes; zombies are
// dead already and only wait for their parent. Only meaningful for a
// dedicated pool uid: never call it with the worker's own uid.
func landlockSweepUID(uid uint32) error {
	if uid == uint32(os.Getuid()) {
		return errors.New("refusing to sweep the worker's own uid")
	}
	deadline := time.Now().Add(landlockSweepTimeout)
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		live, zombies, err := uidProcesses(uid)
		if err != nil {
			return err
		}
		if len(live) == 0 && (len(zombies) == 0 || time.Now().After(deadline)) {
			return nil
		}
		for _, pid := range live {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of uid %d survive the sweep: %v", uid, live)
		}
		// A killed process takes a moment to die and be reaped.
		time.Sleep(backoff)
	}
}

// livePIDsOfUID lists the live (non-zombie) processes of uid.
func livePIDsOfUID(uid uint32) ([]int, error) {
	live, _, err := uidProcesses(uid)
	return live, err
}

// uidProcesses scans /proc once for processes whose real, effective, saved
// or fs uid is uid, split into live ones and zombies. It reads
// /proc/<pid>/status, which a non-dumpable process cannot hide.
func uidProcesses(uid uint32) (live, zombies []int, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, err
	}
	want := strconv.FormatUint(uint64(uid), 10)
	buf := make([]byte, 4096)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // exited meanwhile
		}
		n, _ := io.ReadFull(f, buf)
		f.Close()
		zombie, match := false, false
		for line := range strings.SplitSeq(string(buf[:n]), "\n") {
			if st, ok := strings.CutPrefix(line, "State:"); ok {
				zombie = strings.HasPrefix(strings.TrimSpace(st), "Z")
			}
			if ids, ok := strings.CutPrefix(line, "Uid:"); ok {
				match = slices.Contains(strings.Fields(ids), want)
				break
			}
		}
		switch {
		case match && zombie:
			zombies = append(zombies, pid)
		case match:
			live = append(live, pid)
		}
	}
	return live, zombies, nil
}
