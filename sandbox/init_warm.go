package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A warm sandbox is a namespace-mode sandbox built ahead of its task: the
// init is cloned into fresh namespaces with its uid mapped, attached to a
// fresh cgroup, and has built the whole view (root tmpfs, binds, /dev,
// /proc, /tmp, a fresh scratch directory, pivot_root, network) before it
// blocks reading the task. Only what depends on the task is left for the
// run: its files written into the scratch directory by the worker, the
// cgroup limits, then the init's chdir, rlimits, capability drop, Landlock
// layer (its ruleset built ahead, enforced only if the task's policy is
// the expected one) and exec. Each warm sandbox serves exactly one task;
// the pool refills in the background.
//
// Its stdio are pipes the worker copies to and from the run's Spec (a
// pre-started process cannot be given the caller's files), so runs whose
// Stdin/Stdout/Stderr are *os.File (a terminal) start cold, as do runs with
// a caller's scratch directory (Spec.Scratch).

// maxWarmKeys bounds how many different views are kept warm at once; a new
// one evicts the least recently used.
const maxWarmKeys = 4

// warmKey is what a warm sandbox's view depends on. A spec runs in a warm
// sandbox only when its key matches exactly.
type warmKey struct {
	landlock bool   // the Landlock mode (no namespaces); else the namespace mode
	readOnly string // Spec.ReadOnly, NUL-joined in order
	network  Network
	tmpSize  int64
	unix     bool // Spec.UnixSockets
}

func warmKeyOf(spec Spec) warmKey {
	n := spec.Network
	if n == "" {
		n = NetworkNone
	}
	return warmKey{readOnly: strings.Join(spec.ReadOnly, "\x00"), network: n, tmpSize: spec.Limits.TmpSize, unix: spec.UnixSockets}
}

// landlockKeyOf is the key of a Landlock-mode warm sandbox: its policy
// depends on the toolchain paths and the network; there is no /tmp size.
func landlockKeyOf(spec Spec) warmKey {
	k := warmKeyOf(spec)
	k.landlock, k.tmpSize = true, 0
	return k
}

// spec is the part of a Spec the view is planned from.
func (k warmKey) spec() Spec {
	var ro []string
	if k.readOnly != "" {
		ro = strings.Split(k.readOnly, "\x00")
	}
	return Spec{ReadOnly: ro, Network: k.network, UnixSockets: k.unix, Limits: Limits{TmpSize: k.tmpSize}}
}

// warmState is the Runner's pool of warm sandboxes (nsState.warm).
type warmState struct {
	mu     sync.Mutex
	pools  map[warmKey]*warmPool // nil when Config.Prestart is 0
	closed bool
	// disabled marks a mode whose warm start the kernel refused
	// (ErrUnavailable, keyed by warmKey.landlock): stop trying it. Only that
	// mode: on a host without namespaces the Landlock mode stays warm.
	disabled map[bool]bool
	wg       sync.WaitGroup // refills and discards in flight
	failed   int            // warm setups that failed (discarded)
	// viewHook edits a warm view before it is built (tests: a setup that
	// fails).
	viewHook func(*nsConfig)
}

type warmPool struct {
	ready    chan *warmSandbox
	starting int
	used     time.Time
}

// warmSandbox is one sandbox waiting for its task, served by its own
// goroutine locked to the OS thread that cloned the init (the init's
// Pdeathsig is tied to that thread).
type warmSandbox struct {
	landlock bool
	uid, gid uint32
	pid      int // the init's host pid
	scratch  nsScratch
	held     *heldHome // the home its init mounted (disk_quota.go); nil when on the host
	cg       *runCgroup
	jobs     chan warmJob  // one job; closed to discard the sandbox
	done     chan struct{} // closed once the init is reaped and torn down
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

// startWarm creates the warm pool of the default view (Config.Defaults,
// no read-only paths, network none).
func (r *Runner) startWarm() {
	if r.cfg.Prestart == 0 || r.cfg.Isolation == IsolationNone {
		return
	}
	if !r.warmBoundable() {
		return
	}
	r.ns.warm.mu.Lock()
	r.ns.warm.pools = map[warmKey]*warmPool{}
	k := warmKeyOf(Spec{Limits: r.cfg.Defaults})
	if r.cfg.Isolation == IsolationLandlock {
		k = landlockKeyOf(Spec{})
	}
	r.ns.warm.pools[k] = &warmPool{ready: make(chan *warmSandbox, r.cfg.Prestart), used: time.Now()}
	r.refillLocked(k)
	r.ns.warm.mu.Unlock()
}

// takeWarm returns a warm sandbox for spec if one is ready (creating the
// pool of a view not seen before), and refill, which the caller calls once
// its run is over: refilling during the run would compete with it for the
// CPU on a small host.
func (r *Runner) takeWarm(spec Spec, k warmKey) (w *warmSandbox, refill func()) {
	refill = func() {}
	if spec.Scratch != "" || isFile(spec.Stdin) || isFile(spec.Stdout) || isFile(spec.Stderr) {
		return nil, refill
	}
	ws := &r.ns.warm
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.pools == nil || ws.closed || ws.disabled[k.landlock] {
		return nil, refill
	}
	p := ws.pools[k]
	if p == nil {
		if len(ws.pools) >= maxWarmKeys {
			r.evictLocked()
		}
		p = &warmPool{ready: make(chan *warmSandbox, r.cfg.Prestart)}
		ws.pools[k] = p
	}
	p.used = time.Now()
	select {
	case w = <-p.ready:
	default:
	}
	return w, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if !ws.closed {
			r.refillLocked(k)
		}
	}
}

// evictLocked drops the least recently used view and its sandboxes.
func (r *Runner) evictLocked() {
	ws := &r.ns.warm
	var oldest warmKey
	var t time.Time
	for k, p := range ws.pools {
		if t.IsZero() || p.used.Before(t) {
			oldest, t = k, p.used
		}
	}
	p := ws.pools[oldest]
	delete(ws.pools, oldest)
	for {
		select {
		case w := <-p.ready:
			ws.wg.Add(1)
			go func() { defer ws.wg.Done(); w.discard() }()
			continue
		default:
		}
		return
	}
}

// refillLocked starts warm sandboxes for k in the background until its
// pool is full or a start fails.
func (r *Runner) refillLocked(k warmKey) {
	r.ns.warm.wg.Add(1)
	go func() {
		defer r.ns.warm.wg.Done()
		for r.prestart(k) {
		}
	}()
}

// prestart builds one warm sandbox for k and offers it to the pool. It
// reports false when the pool is full, closed or the start failed.
func (r *Runner) prestart(k warmKey) bool {
	ws := &r.ns.warm
	ws.mu.Lock()
	p := ws.pools[k]
	if ws.closed || ws.disabled[k.landlock] || p == nil || p.starting+len(p.ready) >= cap(p.ready) {
		ws.mu.Unlock()
		return false
	}
	p.starting++
	hook := ws.viewHook
	ws.mu.Unlock()

	w, err := r.newWarm(k, hook)

	ws.mu.Lock()
	defer ws.mu.Unlock()
	p.starting--
	if err != nil {
		ws.failed++
		var se *SetupError
		step := "?"
		if errors.As(err, &se) {
			step = se.Step
		}
		if errors.Is(err, ErrUnavailable) {
			if ws.disabled == nil {
				ws.disabled = map[bool]bool{}
			}
			ws.disabled[k.landlock] = true
		}
		r.log.Warn().Err(err).Str("step", step).Msg("a warm sandbox failed its setup and was discarded; runs start cold")
		return false
	}
	if ws.closed || ws.pools[k] != p {
		ws.wg.Add(1)
		go func() { defer ws.wg.Done(); w.discard() }()
		return false
	}
	p.ready <- w // never blocks: starting+len(ready) < cap was held
	return true
}

// newWarm builds one warm sandbox: uid, scratch, cgroup, and an init that
// has built the view and waits for its task. On failure everything it took
// is given back and the error names the step.
func (r *Runner) newWarm(k warmKey, hook func(*nsConfig)) (*warmSandbox, error) {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if r.ns.pool != nil {
		u, err := r.ns.pool.acquire()
		if err != nil {
			return nil, &SetupError{Step: "acquire sandbox uid", Err: err}
		}
		uid, gid = u, u
	}
	w := &warmSandbox{landlock: k.landlock, uid: uid, gid: gid, jobs: make(chan warmJob, 1), done: make(chan struct{})}
	giveBack := func(err error) (*warmSandbox, error) {
		_ = w.teardown(r)
		return nil, err
	}
	var err error
	if w.scratch, err = r.newScratch(""); err != nil {
		return giveBack(err)
	}
	if err := r.warmQuota(&w.scratch, uid, gid); err != nil {
		return giveBack(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(w.scratch.path, int(uid), int(gid)); err != nil {
			return giveBack(&SetupError{Step: "chown scratch", Path: w.scratch.path, Err: err})
		}
	}
	var ns *nsConfig
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cgName := cgroupName(w.scratch, uid)
	if k.landlock {
		if err := makeLandlockTmp(w.scratch.path, uid, gid); err != nil {
			return giveBack(err)
		}
		cgName = "ll-" + filepath.Base(w.scratch.path) + "-" + fmt.Sprint(uid)
	} else {
		if ns, err = planView(k.spec(), w.scratch.path); err != nil {
			return giveBack(err)
		}
		if err := w.scratch.quotaView(ns, r.warmDiskQuota(), r.cfg.Defaults.Disk, uid, gid); err != nil {
			return giveBack(err)
		}
		if hook != nil {
			hook(ns)
		}
		attr = nsAttr(uid, gid, r.ns.pool != nil)
	}
	policy := r.warmPolicy(k, w.scratch.path, uid, gid) // built by the init ahead of the task
	w.cg, err = r.ns.cgroups.create(cgName, r.cfg.Defaults.Memory, r.cfg.Defaults.Processes)
	if err != nil {
		return giveBack(&SetupError{Step: "create cgroup", Err: err})
	}
	ready := make(chan error, 1)
	go w.serve(r, attr, ns, policy, ready)
	if err := <-ready; err != nil {
		<-w.done // reaped and torn down by serve
		return nil, err
	}
	return w, nil
}

// warmPolicy is the Landlock policy a task of key k will carry in a warm
// sandbox with this scratch and uid (nil: none): the init builds its
// ruleset ahead of the task.
func (r *Runner) warmPolicy(k warmKey, scratch string, uid, gid uint32) *landlockPolicy {
	if k.landlock {
		return r.landlockTask(k.spec(), scratch, uid, gid).Landlock
	}
	cfg, _ := r.taskConfig(k.spec(), scratch)
	return cfg.Landlock
}

func cgroupName(s nsScratch, uid uint32) string {
	return "warren-" + filepath.Base(s.path) + "-" + fmt.Sprint(uid)
}

// serve owns the warm init for its whole life, on one locked OS thread.
// It reports on ready whether the view was built, then runs the one job
// (or is discarded), tears the sandbox down and closes done.
func (w *warmSandbox) serve(r *Runner, attr *syscall.SysProcAttr, ns *nsConfig, policy *landlockPolicy, ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(w.done)
	teardown := func() {
		if err := w.teardown(r); err != nil {
			r.log.Error().Err(err).Uint32("uid", w.uid).Msg("warm sandbox teardown failed")
		}
	}
	pipes, err := newStdioPipes()
	if err != nil {
		teardown()
		ready <- &SetupError{Step: "stdio pipes", Err: err}
		return
	}
	defer pipes.close()
	s, err := startInit(r.init, attr, w.cg.v2Dir(), pipes.inR, pipes.outW, pipes.errW)
	pipes.closeChildEnds()
	if err != nil {
		teardown()
		ready <- refusedByHost(err)
		return
	}
	defer s.close()
	w.pid = s.cmd.Process.Pid
	// Before its task the init has started nothing: killing it is enough.
	kill := func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	if err := s.prepare(w.cg, ns, policy); err != nil {
		kill()
		teardown()
		ready <- refusedByHost(err)
		return
	}
	if ns != nil && ns.Home != nil {
		if w.held, err = openHeldHome(w.pid, w.scratch.path); err != nil {
			kill()
			teardown()
			ready <- err
			return
		}
	}
	ready <- nil

	job, ok := <-w.jobs
	if !ok {
		kill()
		teardown()
		return
	}
	s.start = time.Now()
	res, err := pipes.pump(job.l.spec, func() (*Result, error) { return s.finish(job.ctx, job.l) })
	if err == nil {
		finishHome(job.l.spec, w.warmHome(), res)
	}
	teardown()
	job.out <- warmOut{res: res, err: err}
}

// teardown gives back what the sandbox holds, as its mode's cold path
// does: scratch (home), cgroup, and the uid once verified.
func (w *warmSandbox) teardown(r *Runner) error {
	w.held.close()
	if w.landlock {
		return r.landlockTeardown(w.scratch, w.uid, w.cg)
	}
	return r.teardown(w.scratch, w.uid, w.cg)
}

// prepare attaches the init to its cgroup, sends the view (and the
// Landlock policy to build ahead) and waits until the init reports it
// built (or names the step that failed).
func (s *startedInit) prepare(cg *runCgroup, ns *nsConfig, policy *landlockPolicy) error {
	if err := cg.attach(s.cmd.Process.Pid, cg.v2Dir() != "" && !s.cmd.SysProcAttr.UseCgroupFD); err != nil {
		return &SetupError{Step: "attach cgroup", Err: err}
	}
	s.attached = true
	if err := writeJSON(s.confW, &initConfig{Prepare: true, NS: ns, Landlock: policy}); err != nil {
		return &SetupError{Step: "send view", Err: err}
	}
	var b [1]byte
	if _, err := io.ReadFull(s.statusR, b[:]); err != nil {
		return &SetupError{Step: "init", Err: errInitDied}
	}
	if b[0] == initStatusReady {
		return nil
	}
	rest, _ := io.ReadAll(s.statusR)
	return parseFailure(append(b[:], rest...))
}

// run hands the task to the warm sandbox's goroutine and waits for the
// run to end and the sandbox to be torn down.
func (w *warmSandbox) run(ctx context.Context, l initLaunch) (*Result, error) {
	out := make(chan warmOut, 1)
	w.jobs <- warmJob{ctx: ctx, l: l, out: out}
	o := <-out
	<-w.done
	return o.res, o.err
}

// prepare puts the task's files in the scratch dir and its limits on the
// cgroup; on failure the sandbox is discarded and the task never runs in it.
func (w *warmSandbox) prepare(spec Spec) error {
	if err := w.scratch.resizeQuota(max(spec.Limits.Disk, 0)); err != nil {
		w.discard()
		return err
	}
	home := w.warmHome()
	if err := home.fill(spec, w.uid, w.gid); err != nil {
		w.discard()
		return err
	}
	if err := w.cg.setLimits(spec.Limits.Memory, spec.Limits.Processes); err != nil {
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

// Close kills and reaps the Runner's warm sandboxes and releases their
// uids, scratch directories and cgroups; runs in progress are not
// affected, and later runs start cold. It is idempotent.
func (r *Runner) Close() error {
	ws := &r.ns.warm
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return nil
	}
	ws.closed = true
	var idle []*warmSandbox
	for k, p := range ws.pools {
		for len(p.ready) > 0 {
			idle = append(idle, <-p.ready)
		}
		delete(ws.pools, k)
	}
	ws.mu.Unlock()
	for _, w := range idle {
		w.discard()
	}
	ws.wg.Wait()
	return nil
}

// warmReady is how many warm sandboxes of spec's view are ready (tests).
func (r *Runner) warmReady(k warmKey) int {
	ws := &r.ns.warm
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if p := ws.pools[k]; p != nil {
		return len(p.ready)
	}
	return 0
}

// warmSandboxes lists the ready warm sandboxes of every view (tests).
func (r *Runner) warmSandboxes() []*warmSandbox {
	ws := &r.ns.warm
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var all []*warmSandbox
	for _, p := range ws.pools {
		for range len(p.ready) {
			w := <-p.ready
			all = append(all, w)
			p.ready <- w
		}
	}
	return all
}

func isFile(x any) bool {
	_, ok := x.(*os.File)
	return ok
}

// stdioPipes connect a pre-started init to a Spec's stdio.
type stdioPipes struct {
	inR, inW, outR, outW, errR, errW *os.File
}

func newStdioPipes() (*stdioPipes, error) {
	var p stdioPipes
	var errs [3]error
	p.inR, p.inW, errs[0] = os.Pipe()
	p.outR, p.outW, errs[1] = os.Pipe()
	p.errR, p.errW, errs[2] = os.Pipe()
	if err := errors.Join(errs[:]...); err != nil {
		p.close()
		return nil, err
	}
	return &p, nil
}

func (p *stdioPipes) files() []*os.File {
	return []*os.File{p.inR, p.inW, p.outR, p.outW, p.errR, p.errW}
}

func (p *stdioPipes) close() {
	for _, f := range p.files() {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeChildEnds closes the ends the init holds (it has its own copies).
func (p *stdioPipes) closeChildEnds() {
	for _, f := range []*os.File{p.inR, p.outW, p.errW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// pump copies spec's stdio to and from the pipes while run runs, then
// drains what the task wrote.
func (p *stdioPipes) pump(spec Spec, run func() (*Result, error)) (*Result, error) {
	go func() {
		if spec.Stdin != nil {
			_, _ = io.Copy(p.inW, spec.Stdin)
		}
		_ = p.inW.Close()
	}()
	stdout, stderr := spec.Stdout, spec.Stderr
	if stdout != nil && sameWriter(stdout, stderr) {
		// One writer for both streams (as exec.Cmd promises): one Write at
		// a time, or the two copies race on it.
		lw := &syncWriter{w: stdout}
		stdout, stderr = lw, lw
	}
	var copies sync.WaitGroup
	copyOut := func(dst io.Writer, src *os.File) {
		defer copies.Done()
		if dst == nil {
			dst = io.Discard
		}
		_, _ = io.Copy(dst, src)
	}
	copies.Add(2)
	go copyOut(stdout, p.outR)
	go copyOut(stderr, p.errR)
	res, err := run()
	// Every writer died with the pid namespace; bound the wait anyway, as
	// exec.Cmd's WaitDelay does.
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(time.Second):
		_ = p.outR.Close()
		_ = p.errR.Close()
		<-drained
	}
	return res, err
}

// sameWriter reports whether a and b are the same writer (==, when their
// type can be compared at all).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // not comparable: treated as different, as exec.Cmd does
		}
	}()
	return a == b
}

// syncWriter serialises the Writes of two copies into one writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *syncWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
