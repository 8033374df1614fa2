package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// A template's task (template.go): its init, forked and made ready ahead
// (readyChild), then the task run on it (templateTask) and the check that
// nothing of it is left (templateClean).

// readyChild is a task's init, forked by a template, that has built
// its fresh mounts (and the Landlock ruleset it expects) and waits for a
// task: made ahead, while the template is idle, so a task finds it ready.
type readyChild struct {
	s     *startedInit
	child *templateChild
	pipes *stdioPipes
	box   box   // the template's, with this child's fresh home held
	size  int64 // the home's disk limit
}

// readyChild forks a task's init in template w with a home of size bytes
// and the Landlock ruleset policy built ahead, and waits until it is ready.
func (w *warmSandbox) readyChild(size int64, policy *landlockPolicy) (*readyChild, error) {
	// The child's ends are bare descriptors, sent to the parent and closed:
	// only the worker's ends are files the runtime's poller serves.
	var kept [initproc.TemplateTaskFDs]*os.File
	var ends [initproc.TemplateTaskFDs]int
	closeAll := func() {
		for i := range kept {
			if kept[i] != nil {
				kept[i].Close()
			}
		}
	}
	for i, keepRead := range [initproc.TemplateTaskFDs]bool{false, true, true, false, true} { // stdin, stdout, stderr, config, status
		var err error
		if kept[i], ends[i], err = pipeFor(keepRead); err != nil {
			closeFDs(ends[:i])
			closeAll()
			return nil, fmt.Errorf("%w: pipes: %w", errTemplateGone, err)
		}
	}
	child, err := w.template.spawn(ends)
	closeFDs(ends[:])
	if err != nil {
		closeAll()
		return nil, err
	}
	pipes := &stdioPipes{inW: kept[0], outR: kept[1], errR: kept[2]}
	confW, statusR := kept[3], kept[4]
	// Born in the template's cgroup, so attached already.
	c := &readyChild{child: child, pipes: pipes, size: size,
		s: &startedInit{proc: child, confW: confW, statusR: statusR, start: time.Now(), attached: true, born: true}}
	// The task's own box: the template's identity and cgroup, and a home
	// that is the fresh tmpfs the child mounts over the template's.
	c.box = w.box
	c.box.held = nil
	c.box.home.quota, c.box.home.size = quotaInit, size
	err = c.s.prepare(nil, &initConfig{Prepare: true, Fresh: w.fresh(size), Landlock: policy})
	if err == nil {
		err = c.box.hold(child.pid)
	}
	if err != nil {
		c.discard()
		return nil, fmt.Errorf("%w: %w", errTemplateGone, err)
	}
	return c, nil
}

// discard kills a child that will run no task and releases what it holds.
func (c *readyChild) discard() {
	c.child.stop()
	c.close()
}

func (c *readyChild) close() {
	c.s.close()
	c.pipes.close()
	c.box.held.close()
}

// templateTask runs one task in template w on c, its init ready: the
// cgroup's limits and counters made the task's, its files written into the
// fresh home, then the task itself. c is used up.
func (w *warmSandbox) templateTask(job warmJob, c *readyChild) (*Result, error) {
	defer c.close()
	spec := job.l.spec
	err := w.cg.BeginTask(spec.Limits.Memory, spec.Limits.Processes+w.parentTasks)
	if err != nil {
		err = &SetupError{Step: "set cgroup limits", Err: err}
	} else if len(spec.Files) > 0 || spec.Cwd != "" {
		// As the template's uid: the files are its own as they are made (no
		// chown walk), and root's ids have no name in the home's tmpfs.
		err = asTemplateUID(c.box.uid, c.box.gid, func() error { return c.box.reached().write(spec) })
	}
	if err == nil {
		// The task's own home, the fresh tmpfs: never the
		// template's, under it.
		err = c.box.homeReady(spec)
	}
	if err != nil {
		c.child.stop()
		return nil, fmt.Errorf("%w: %w", errTemplateGone, err)
	}
	c.s.start = time.Now()
	l := job.l
	l.cfg = w.overParent(l.cfg)
	res, err := c.pipes.pump(spec, func() (*Result, error) { return c.s.finish(job.ctx, l) })
	if err == nil {
		c.box.finished(spec, res)
	}
	return res, err
}

// templateClean reports whether nothing of the last task is left in the
// template: its cgroup holds the template alone (the task's pid namespace
// dies with its init, just after the parent reaps it: allow it a moment).
// Without a cgroup (an unprivileged worker on cgroup v1): the parent has
// no child left, as every process of a task is in the pid namespace of
// the task's init, the parent's child.
func (w *warmSandbox) templateClean() bool {
	clean := func() bool { return w.cg.HoldsOnly(w.pid) }
	if w.cg == nil {
		clean = func() bool { return childless(w.pid) }
	}
	deadline := time.Now().Add(releaseGrace)
	for backoff := 50 * time.Microsecond; ; backoff = min(2*backoff, 10*time.Millisecond) {
		if clean() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(backoff)
	}
}

// asTemplateUID runs fn with the template's uid and gid as this (locked)
// thread's filesystem ids when the worker is root: the task's home is a
// tmpfs of the template's user namespace, which maps that uid alone, so a
// file root created there would have no owner it can name (EOVERFLOW). An
// unprivileged worker is that uid already.
func asTemplateUID(uid, gid uint32, fn func() error) error {
	if os.Geteuid() != 0 || uid == 0 {
		return fn()
	}
	if err := unix.Setfsgid(int(gid)); err != nil {
		return &SetupError{Step: "setfsgid", Err: err}
	}
	defer unix.Setfsgid(0)
	if err := unix.Setfsuid(int(uid)); err != nil {
		return &SetupError{Step: "setfsuid", Err: err}
	}
	defer unix.Setfsuid(0)
	return fn()
}

// overParent is the task's config with RLIMIT_NPROC raised by the
// template's threads (per uid in the template's user namespace, which they
// share), so the task gets its whole Limits.Processes.
func (w *warmSandbox) overParent(cfg *initConfig) *initConfig {
	if w.parentTasks == 0 {
		return cfg
	}
	c := *cfg
	c.Rlimits = slices.Clone(cfg.Rlimits)
	for i := range c.Rlimits {
		if l := &c.Rlimits[i]; l.Resource == unix.RLIMIT_NPROC && l.Max != unix.RLIM_INFINITY {
			l.Cur += uint64(w.parentTasks)
			l.Max += uint64(w.parentTasks)
		}
	}
	return &c
}

// fresh is what a task's init mounts in template w: a home of size bytes,
// and again what the template's view has under /tmp and /dev/shm, which its
// own cover (the home among them when it lives there, hidden paths last).
func (w *warmSandbox) fresh(size int64) *initproc.Fresh {
	f := &initproc.Fresh{Home: initproc.HomeQuota{Path: w.home.path, Size: size}}
	for _, b := range w.view.Binds {
		if initproc.UnderTmp(b.Source) {
			f.Keep = append(f.Keep, b)
		}
	}
	for _, l := range w.view.Symlinks {
		if initproc.UnderTmp(l.Path) {
			f.Symlinks = append(f.Symlinks, l)
		}
	}
	for _, h := range w.view.Hide {
		if initproc.UnderTmp(h) {
			f.Hide = append(f.Hide, h)
		}
	}
	return f
}

// childless reports whether no thread of pid has a child left (its
// /proc/<pid>/task/<tid>/children lists are empty).
func childless(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tids, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, t := range tids {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil || len(strings.TrimSpace(string(b))) > 0 {
			return false
		}
	}
	return true
}

// pipeFor makes a pipe whose end kept here (the read end when keepRead)
// is a file the runtime's poller serves and whose other end is a bare
// descriptor for a child (close-on-exec: it reaches the child only by
// SCM_RIGHTS).
func pipeFor(keepRead bool) (*os.File, int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	kept, end := p[1], p[0]
	if keepRead {
		kept, end = p[0], p[1]
	}
	if err := unix.SetNonblock(kept, true); err != nil {
		closeFDs(p[:])
		return nil, -1, err
	}
	return os.NewFile(uintptr(kept), "pipe"), end, nil
}
