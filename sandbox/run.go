package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// The run skeleton, one for every isolated mode, cold or warm:
//
//	validate → identity → home → mode's preparation → cgroup → launch
//	→ layers in force → teardown
//
// A warm sandbox (warm_sandbox.go) is the same skeleton cut in two: all
// but the launch ahead of its task (acquire), the launch when the task
// arrives (runWarm).

// box is what one sandbox holds on the host: its identity, its home (the
// scratch directory) and its cgroup. Its mode gives it back (mode.teardown).
type box struct {
	uid, gid uint32
	home     scratchDir
	cg       *runCgroup // nil when limits are rlimits only
}

// runIsolated runs spec in the isolated mode m, in a warm sandbox when one
// of its view is ready, else cold.
func (r *Runner) runIsolated(ctx context.Context, m mode, spec Spec) (*Result, error) {
	r.setupHost()
	if err := m.validate(r, spec); err != nil {
		return nil, err
	}
	w, refill := r.takeWarm(spec, m.warmKey(spec))
	defer refill()
	var res *Result
	var layers Layers
	var err error
	if w != nil {
		res, layers, err = r.runWarm(ctx, m, spec, w)
	} else {
		res, layers, err = r.runCold(ctx, m, spec)
	}
	if err != nil {
		return nil, err
	}
	res.InForce = layers.String()
	res.ResourceLimits = r.cgroups.String()
	return res, nil
}

// runCold acquires a sandbox for spec, launches its init and tears the
// sandbox down once the run is over.
func (r *Runner) runCold(ctx context.Context, m mode, spec Spec) (*Result, Layers, error) {
	b, plan, err := r.acquire(m, spec, spec.Limits, nil)
	if err != nil {
		return nil, 0, err
	}
	defer r.giveBack(m, b)
	cfg, layers := m.task(r, spec, b)
	cfg.NS = plan.view
	res, err := r.launchInit(ctx, initLaunch{cfg: cfg, attr: plan.attr, cgroup: b.cg, spec: spec, killTree: m.killTree()})
	if err != nil {
		return nil, 0, m.hostRefused(err)
	}
	return res, layers, nil
}

// runWarm runs spec in a warm sandbox whose home, cgroup and init (and, in
// namespace mode, view) are made already: only the task's files, its
// cgroup limits and the task phase of the init are left. A failure
// discards the sandbox; the task never ran in it.
func (r *Runner) runWarm(ctx context.Context, m mode, spec Spec, w *warmSandbox) (*Result, Layers, error) {
	if err := w.prepare(spec); err != nil {
		return nil, 0, err
	}
	cfg, layers := m.task(r, spec, &w.box)
	res, err := w.run(ctx, initLaunch{cfg: cfg, cgroup: w.cg, spec: spec, killTree: m.killTree()})
	if err != nil {
		return nil, 0, err
	}
	return res, layers, nil
}

// acquire takes what a sandbox of mode m holds on the host, in order: an
// identity, a home (spec.Scratch, else a fresh directory, with spec's
// files in it, handed to the identity), what the mode prepares (hook, if
// set, edits the view: tests), then a cgroup bounded by limits. On failure
// everything taken is given back and the error names the step.
func (r *Runner) acquire(m mode, spec Spec, limits Limits, hook func(*nsConfig)) (*box, launchPlan, error) {
	uid, gid, err := r.acquireIdentity()
	if err != nil {
		return nil, launchPlan{}, err
	}
	b := &box{uid: uid, gid: gid}
	fail := func(err error) (*box, launchPlan, error) {
		r.giveBack(m, b)
		return nil, launchPlan{}, err
	}
	home, err := r.newScratch(spec.Scratch)
	if err != nil {
		return fail(err)
	}
	if err := home.fill(spec, uid, gid); err != nil {
		_ = home.cleanup()
		return fail(err)
	}
	b.home = home
	plan, err := m.prepare(r, b, spec)
	if err != nil {
		return fail(err)
	}
	if hook != nil && plan.view != nil {
		hook(plan.view)
	}
	b.cg, err = r.cgroups.create(cgroupName(m.isolation(), b), limits.Memory, limits.Processes)
	if err != nil {
		return fail(&SetupError{Step: "create cgroup", Err: err})
	}
	return b, plan, nil
}

// giveBack tears b down (its mode's teardown), logging what failed: the
// run's outcome stands, the uid is quarantined by the teardown check.
func (r *Runner) giveBack(m mode, b *box) {
	if err := m.teardown(r, b); err != nil {
		r.log.Error().Err(err).Str("mode", string(m.isolation())).Uint32("uid", b.uid).Msg("sandbox teardown failed")
	}
}

// acquireIdentity returns the uid and gid a run executes as: a dedicated
// uid from the pool when the worker is root, else the worker's own.
func (r *Runner) acquireIdentity() (uid, gid uint32, err error) {
	if r.pool == nil {
		return uint32(os.Getuid()), uint32(os.Getgid()), nil
	}
	u, err := r.pool.acquire()
	if err != nil {
		return 0, 0, &SetupError{Step: "acquire sandbox uid", Err: err}
	}
	return u, u, nil
}

// cgroupPrefixes start the name of a run's cgroup, per mode; the home's
// name (which carries the owner tag sweepStale reads) and the uid follow.
var cgroupPrefixes = map[Isolation]string{
	IsolationNamespace: "warren-",
	IsolationLandlock:  "ll-",
}

// cgroupName is the name of b's cgroup in mode iso: the one place run
// cgroups are named.
func cgroupName(iso Isolation, b *box) string {
	return cgroupPrefixes[iso] + filepath.Base(b.home.path) + "-" + fmt.Sprint(b.uid)
}
