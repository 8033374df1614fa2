package sandbox

import (
	"context"
	"errors"
	"fmt"
)

// The run skeleton, one for every isolated mode, cold or warm:
//
//	validate → identity → home → mode's preparation → cgroup → launch
//	→ layers in force → teardown
//
// The first half (identity, home, preparation, cgroup) is acquire and
// the teardown giveBack (box.go), shared with the warm pool: a warm
// sandbox (warm_sandbox.go) is the same skeleton cut in two, acquire ahead
// of its task and the launch when the task arrives (runWarm).

// runAuto runs spec in the strongest mode the host supports: namespaces
// with the Landlock layer on top (namespace only when Landlock is below
// the floor, as InForce then says), else Landlock alone, else refuses with
// both reasons. Only ErrUnavailable (the host refusing the namespace mode
// itself: namespaceMode.hostRefused) falls back; any other failure is the
// run's.
func (r *Runner) runAuto(ctx context.Context, spec Spec) (*Result, error) {
	res, nsErr := r.runIsolated(ctx, namespaceMode{}, spec)
	if nsErr == nil || !errors.Is(nsErr, ErrUnavailable) {
		return res, nsErr
	}
	r.log.Warn().Err(nsErr).Msg("namespaces unavailable, falling back to Landlock isolation")
	res, llErr := r.runIsolated(ctx, landlockMode{}, spec)
	if llErr != nil {
		return nil, fmt.Errorf("%w: no isolation available: namespaces: %w; landlock: %w", ErrUnavailable, nsErr, llErr)
	}
	return res, nil
}

// runIsolated runs spec in the isolated mode m, in a warm sandbox when one
// of its view is ready, else cold.
func (r *Runner) runIsolated(ctx context.Context, m mode, spec Spec) (*Result, error) {
	r.setupHost()
	if err := m.validate(r, spec); err != nil {
		return nil, err
	}
	w, refill := r.warm.take(spec, m.warmKey(spec))
	defer refill()
	var res *Result
	var layers Layers
	var err error
	if w != nil {
		res, layers, err = r.runWarm(ctx, m, spec, w)
		if errors.Is(err, errTemplateGone) {
			// The task never ran in it: run it cold.
			r.log.Warn().Err(err).Msg("a template could not take its task and was discarded; the task runs cold")
			res, layers, err = r.runCold(ctx, m, spec)
		}
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
	cfg, layers, err := m.task(r, spec, b)
	if err != nil {
		return nil, 0, err
	}
	l := initLaunch{cfg: cfg, attr: plan.attr, cgroup: b.cg, spec: spec, killTree: m.killTree(r, b)}
	if b.home.quota == quotaInit {
		// The init mounts the home: it builds the view first, then the
		// task's files go in through it (disk_quota.go).
		l.view = plan.view
		l.beforeTask = func(pid int) error {
			if err := b.hold(pid); err != nil {
				return err
			}
			if err := b.fill(spec); err != nil {
				return err
			}
			return b.homeReady(spec)
		}
	} else {
		cfg.NS = plan.view
		if err := b.homeReady(spec); err != nil {
			return nil, 0, err
		}
	}
	res, err := r.launchInit(ctx, l)
	if err != nil {
		return nil, 0, m.hostRefused(err)
	}
	b.finished(spec, res)
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
	cfg, layers, err := m.task(r, spec, &w.box)
	if err != nil {
		w.discard()
		return nil, 0, err
	}
	res, err := w.run(ctx, initLaunch{cfg: cfg, cgroup: w.cg, spec: spec, killTree: m.killTree(r, &w.box)})
	if err != nil {
		return nil, 0, err
	}
	return res, layers, nil
}
