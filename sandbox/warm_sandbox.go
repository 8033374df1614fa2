package sandbox

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"time"
)

// A warm sandbox is a sandbox built ahead of its task by the run skeleton
// (acquire): identity, home, cgroup (at Config.Defaults' limits) and an
// init started and waiting. In namespace mode the init is cloned into
// fresh namespaces and has built the whole view (root tmpfs, binds, /dev,
// /proc, /tmp, pivot_root, network) before it blocks reading the task; in
// Landlock mode the home's TMPDIR is made. Only what depends on the task
// is left for the run (runWarm): its files written into the home by the
// worker, the cgroup limits, then the init's chdir, rlimits, capability
// drop, Landlock policy (its ruleset built ahead, enforced only if the
// task's policy is the expected one) and exec. Each warm sandbox serves
// exactly one task. Its stdio are pipes the worker copies to and from the
// run's Spec (stdio_pipes.go).

// warmSandbox is one sandbox waiting for its task, served by its own
// goroutine locked to the OS thread that cloned the init (the init's
// Pdeathsig is tied to that thread). A template (template.go) serves task
// after task and goes back to its pool after each; any other serves one.
type warmSandbox struct {
	mode mode
	box
	pid      int             // the init's host pid
	key      warmKey         // the view it goes back to (a template)
	template *templateParent // nil: not a template, the init runs the one task itself
	// lentFrom is the view a template running a task came from; builtFor
	// the one it went into when built; primed that, waiting there, it has
	// its next task's init made (warm_pool.go, guarded by its mutex).
	lentFrom *warmView
	builtFor *warmView
	primed   bool
	// parentTasks are a template's own threads before the task, which
	// the task's process limits count on top of (cgroup.Group.BeginTask).
	parentTasks int64
	view        *nsConfig       // the view a template built (its tasks keep what /tmp covers)
	taskPolicy  *landlockPolicy // the Landlock policy a template's tasks most likely carry
	jobs        chan warmJob    // a job at a time; closed to discard the sandbox
	done        chan struct{}   // closed once the init is reaped and torn down
}

type warmJob struct {
	ctx context.Context
	l   initLaunch
	out chan warmOut
}

type warmOut struct {
	res *Result
	err error
}

// newWarm builds one warm sandbox for k: the skeleton's acquire, then an
// init that has built the view and waits for its task. On failure
// everything it took is given back and the error names the step.
func newWarm(r *Runner, k warmKey, hook func(*nsConfig)) (*warmSandbox, error) {
	m := k.mode
	b, plan, err := r.acquire(m, k.spec(), r.cfg.Defaults, hook)
	if err != nil {
		return nil, err
	}
	w := &warmSandbox{mode: m, box: *b, key: k, view: plan.view, jobs: make(chan warmJob, 1), done: make(chan struct{})}
	policy, err := warmPolicy(r, m, k, b) // built by the init ahead of the task
	if err != nil {
		r.giveBack(m, b)
		return nil, err
	}
	var templateEnd *os.File
	if templates(r, m) {
		// A template: its tasks' inits build the policy, not the template.
		if w.template, templateEnd, err = newTemplateSocket(); err != nil {
			r.giveBack(m, b)
			return nil, err
		}
		w.taskPolicy, policy = policy, nil
	}
	ready := make(chan error, 1)
	go w.serve(r, plan.attr, plan.view, policy, templateEnd, ready)
	if err := <-ready; err != nil {
		<-w.done // reaped and torn down by serve
		return nil, err
	}
	return w, nil
}

// warmPolicy is the Landlock policy a task of key k will carry in b, a
// warm sandbox of mode m (nil: none): the init builds its ruleset ahead
// of the task.
func warmPolicy(r *Runner, m mode, k warmKey, b *box) (*landlockPolicy, error) {
	cfg, _, err := m.task(r, k.spec(), b)
	if err != nil {
		return nil, err
	}
	return cfg.Landlock, nil
}

// serve owns the warm init for its whole life, on one locked OS thread.
// It reports on ready whether the view was built, then runs the one job
// (or is discarded), tears the sandbox down and closes done.
func (w *warmSandbox) serve(r *Runner, attr *syscall.SysProcAttr, ns *nsConfig, policy *landlockPolicy, templateEnd *os.File, ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(w.done)
	teardown := func() {
		if w.template != nil {
			w.template.close()
		}
		r.giveBack(w.mode, &w.box)
	}
	pipes, err := newStdioPipes()
	if err != nil {
		if templateEnd != nil {
			templateEnd.Close()
		}
		teardown()
		ready <- &SetupError{Step: "stdio pipes", Err: err}
		return
	}
	defer pipes.close()
	var s *startedInit
	if templateEnd != nil {
		// The template's stdio is /dev/null: each task has its own.
		s, err = startInit(r.init, attr, w.cg, nil, nil, nil, templateEnd)
		templateEnd.Close()
	} else {
		s, err = startInit(r.init, attr, w.cg, pipes.inR, pipes.outW, pipes.errW)
	}
	pipes.closeChildEnds()
	if err != nil {
		teardown()
		ready <- refusedByHost(err)
		return
	}
	defer s.close()
	w.pid = s.proc.hostPID()
	// Before its task the init has started nothing: killing it is enough.
	kill := func() { s.kill(nil) }
	err = s.prepare(w.cg, &initConfig{Prepare: true, NS: ns, Landlock: policy, Template: w.template != nil})
	if err == nil && w.template == nil {
		err = w.hold(w.pid) // a home the init mounted (disk_quota.go)
	}
	if err != nil {
		kill()
		teardown()
		ready <- refusedByHost(err)
		return
	}
	ready <- nil

	if w.template != nil {
		w.serveTemplate(r, kill, teardown)
		return
	}
	job, ok := <-w.jobs
	if !ok {
		kill()
		teardown()
		return
	}
	s.start = time.Now()
	res, err := pipes.pump(job.l.spec, func() (*Result, error) { return s.finish(job.ctx, job.l) })
	if err == nil {
		w.finished(job.l.spec, res)
	}
	teardown()
	job.out <- warmOut{res: res, err: err}
}

// serveTemplate runs a template's tasks, one job at a time, until the
// template is discarded or a task leaves it unusable; after each task the
// template goes back to its pool, once nothing of the task is left in it,
// before the task's result is handed over (so the run's refill finds it
// there).
//
// While idle the template has the next task's init ready (readyChild: a
// home of the default disk limit, the key's Landlock ruleset), made once
// the template is back, with the cgroup at its default limits.
func (w *warmSandbox) serveTemplate(r *Runner, kill, teardown func()) {
	next := w.prime(r)
	job, ok := <-w.jobs
	for ok {
		c := next
		next = nil
		if c == nil || c.size != job.l.spec.Limits.Disk {
			if c != nil {
				c.discard()
			}
			var err error
			if c, err = w.readyChild(job.l.spec.Limits.Disk, job.l.cfg.Landlock); err != nil {
				r.warm.unlend(w)
				kill()
				teardown()
				job.out <- warmOut{err: err}
				return
			}
		}
		res, err := w.templateTask(job, c)
		why := ""
		switch {
		case err != nil:
			why = "its task failed to run"
		case !w.templateClean():
			why = "processes of its last task outlived it"
			r.log.Warn().Uint32("uid", w.uid).Msg("a template's cgroup still holds processes of its last task after " + releaseGrace.String() + ": the template is discarded")
		case !r.warm.putBack(w):
			why = "its pool is full or gone"
		}
		if why != "" {
			r.warm.unlend(w)
			r.log.Debug().Err(err).Str("why", why).Uint32("uid", w.uid).Msg("template discarded")
			kill()
			teardown()
			job.out <- warmOut{res: res, err: err}
			return
		}
		job.out <- warmOut{res: res, err: err}
		job, ok, next = w.awaitJob(r)
	}
	if next != nil {
		next.discard()
	}
	r.warm.unlend(w)
	kill()
	teardown()
}

// awaitJob waits, after a task, for the template's next job and returns it
// (ok false: the template is discarded) with the next task's init: made at
// once, or after the refill's deferral (warm_pool.go), or on the job's
// arrival if it comes first.
func (w *warmSandbox) awaitJob(r *Runner) (job warmJob, ok bool, next *readyChild) {
	if d, taken := r.warm.refillWait(w); d > 0 {
		t := time.NewTimer(d)
		came := false
		select {
		case job, ok = <-w.jobs:
			came = true
		case <-taken:
		case <-t.C:
		}
		t.Stop()
		r.warm.refillDone(w)
		if came {
			if ok {
				next = w.nextChild(r, job.l.spec.Limits.Disk, job.l.cfg.Landlock) // the job's own
			}
			return job, ok, next
		}
	}
	next = w.prime(r)
	job, ok = <-w.jobs
	return job, ok, next
}

// prime makes the next task's init of the waiting template (nil on failure:
// nextChild) and counts it in the pool.
func (w *warmSandbox) prime(r *Runner) *readyChild {
	c := w.nextChild(r, r.cfg.Defaults.Disk, w.taskPolicy)
	if c != nil {
		r.warm.markPrimed(w)
	}
	return c
}

// nextChild readies the next task's init with a home of size bytes and
// the Landlock ruleset policy while the template is idle: the cgroup back
// at the default limits (a task's own could be too small for an init's
// start), the parent's own threads counted first. A failure
// leaves it to the next task to fork its own (and fail the template then).
func (w *warmSandbox) nextChild(r *Runner, size int64, policy *landlockPolicy) *readyChild {
	n, err := w.cg.TasksNow()
	if err == nil {
		w.parentTasks = n
		err = w.cg.SetLimits(r.cfg.Defaults.Memory, r.cfg.Defaults.Processes+n)
	}
	if err != nil {
		r.log.Debug().Err(err).Msg("template: the next task's init is not made ahead")
		return nil
	}
	c, err := w.readyChild(size, policy)
	if err != nil {
		r.log.Debug().Err(err).Msg("template: the next task's init is not made ahead")
		return nil
	}
	return c
}

// run hands the task to the warm sandbox's goroutine and waits for the
// run to end (and a sandbox that does not serve again to be torn down).
func (w *warmSandbox) run(ctx context.Context, l initLaunch) (*Result, error) {
	out := make(chan warmOut, 1)
	w.jobs <- warmJob{ctx: ctx, l: l, out: out}
	o := <-out
	return o.res, o.err
}

// prepare gives the home the task's disk limit and files and the cgroup
// its limits; on failure the sandbox is discarded and the task never runs
// in it.
func (w *warmSandbox) prepare(spec Spec) error {
	if w.template != nil {
		return nil // each task gets a home of its limit and its cgroup limits in the template (templateTask)
	}
	err := w.home.resize(spec.Limits.Disk)
	if err == nil {
		err = w.fill(spec)
	}
	if err == nil {
		err = w.homeReady(spec)
	}
	if err != nil {
		w.discard()
		return err
	}
	if err := w.cg.SetLimits(spec.Limits.Memory, spec.Limits.Processes); err != nil {
		w.discard()
		return &SetupError{Step: "set cgroup limits", Err: err}
	}
	return nil
}

// discard kills an unused warm sandbox and waits for its teardown.
func (w *warmSandbox) discard() {
	close(w.jobs)
	<-w.done
}
