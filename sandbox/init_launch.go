package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/initproc"
	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"golang.org/x/sys/unix"
)

// stepStartInit is the SetupError step of a failed clone/exec of the init
// (in namespace mode: the kernel refused the namespaces).
const stepStartInit = "start init"

// errInitDied means the init ended before it either exec'd the task or
// reported a failed step (killed, say).
var errInitDied = errors.New("the sandbox init died during setup")

// initLaunch is one start of the sandbox init, shared by the isolated modes.
type initLaunch struct {
	cfg    *initConfig
	attr   *syscall.SysProcAttr // clone flags, ids, Pdeathsig (set here if zero)
	cgroup *cgroup.Group        // nil when limits are rlimits only
	spec   Spec                 // stdio and limits
	// killTree kills every process of the run; defaults to killing the
	// init, which in a pid namespace takes the whole namespace with it.
	killTree func(p *os.Process)
	// beforeTask, when set, splits a cold launch in two as a warm
	// sandbox's is: the init builds view (cfg.NS is then nil) and waits,
	// and beforeTask(init's pid) runs before the task is sent (a home the
	// init mounted is filled through its view: disk_quota.go).
	beforeTask func(pid int) error
	view       *nsConfig
}

// startedInit is an init cloned into its namespaces and waiting for its
// config (it blocks reading it, so nothing of the task runs yet).
type startedInit struct {
	proc    initProc
	confW   *os.File // the init's lifeline: closed once the run is over
	statusR *os.File
	start   time.Time
	// attached: the init is in its cgroup already (a warm sandbox).
	attached bool
	// registered is the pid registerInit recorded (0: none); close, which
	// runs after the reap, drops it.
	registered int
	// born: cloned into its cgroup (v2 CgroupFD, v1 CloneInside).
	born bool
}

func (s *startedInit) close() {
	_ = s.confW.Close()
	_ = s.statusR.Close()
	if s.registered != 0 {
		unregisterInit(s.registered)
		s.registered = 0
	}
}

// launchInit starts the init, sends its config, and waits for the task
// tree to end. An error means the task never ran (a *SetupError naming the
// step) or its end could not be observed.
func (r *Runner) launchInit(ctx context.Context, l initLaunch) (*Result, error) {
	// Pdeathsig fires when the creating *thread* exits: keep this goroutine
	// on its thread until the init is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var stdin io.Reader = l.spec.Stdin
	var stdout, stderr io.Writer = l.spec.Stdout, l.spec.Stderr
	var pipes *stdioPipes
	if hasTerminal(l.spec) {
		// A descriptor open on a terminal lets its holder change the
		// terminal (TCSETS, TIOCSWINSZ): the task gets pipes instead,
		// which the worker copies, as a warm sandbox's task does.
		p, err := newStdioPipes()
		if err != nil {
			return nil, &SetupError{Step: "stdio pipes", Err: err}
		}
		defer p.close()
		pipes = p
		stdin, stdout, stderr = p.inR, p.outW, p.errW
	}
	s, err := startInit(r.init, l.attr, l.cgroup, stdin, stdout, stderr)
	if pipes != nil {
		pipes.closeChildEnds()
	}
	if err != nil {
		return nil, err
	}
	defer s.close()
	run := func() (*Result, error) {
		if l.beforeTask != nil {
			err := s.prepare(l.cgroup, &initConfig{Prepare: true, NS: l.view, Landlock: l.cfg.Landlock})
			if err == nil {
				err = l.beforeTask(s.proc.hostPID())
			}
			if err != nil {
				// Before its task the init has started nothing: killing it is enough.
				s.kill(nil)
				return nil, err
			}
		}
		return s.finish(ctx, l)
	}
	if pipes != nil {
		return pipes.pump(l.spec, run)
	}
	return run()
}

// killRun kills an init's run: its tree (killTree) or the init, which in
// a pid namespace takes the whole namespace with it.
func killRun(cmd *exec.Cmd, killTree func(*os.Process)) {
	if killTree != nil {
		killTree(cmd.Process)
		return
	}
	_ = cmd.Process.Kill()
}

// startInit clones the init. The caller's goroutine must be locked to its
// OS thread until the init is reaped (Pdeathsig).
func startInit(init initBinary, attr *syscall.SysProcAttr, cg *cgroup.Group, stdin io.Reader, stdout, stderr io.Writer, extra ...*os.File) (*startedInit, error) {
	return startInitIn(init, attr, cg, cg.V2Dir(), stdin, stdout, stderr, extra...)
}

// initDescriptors are the init's descriptors from 3 on: its config and status
// pipes, extra (at most TemplateFD), and the binary it is exec'd through at
// BinaryFD. A child's descriptors are numbered by their place here, and
// nothing else of the worker's reaches the child, so the exec'd number is
// the init's whatever the worker's own numbers are.
func initDescriptors(init initBinary, confR, statusW *os.File, extra []*os.File) []*os.File {
	files := append([]*os.File{confR, statusW}, extra...)
	if init.file == nil {
		return files
	}
	for len(files) < initproc.BinaryFD-3 {
		files = append(files, nil) // closed in the child
	}
	return append(files, init.file)
}

// startInitIn is startInit with the v2 cgroup to clone into (""
// for none: v1, or a clone3 refused).
//
// extra are the init's descriptors after its status pipe (a template's
// socket: initproc.TemplateFD).
func startInitIn(init initBinary, attr *syscall.SysProcAttr, cg *cgroup.Group, cgroupV2Dir string, stdin io.Reader, stdout, stderr io.Writer, extra ...*os.File) (*startedInit, error) {
	if init.file != nil && 5+len(extra) > initproc.BinaryFD {
		return nil, &SetupError{Step: stepStartInit, Path: init.path, Err: fmt.Errorf("%d extra descriptors overlap the init binary's (%d)", len(extra), initproc.BinaryFD)}
	}
	confR, confW, err := os.Pipe()
	if err != nil {
		return nil, &SetupError{Step: "config pipe", Err: err}
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		confR.Close()
		confW.Close()
		return nil, &SetupError{Step: "status pipe", Err: err}
	}
	cmd := &exec.Cmd{
		Path:        init.exec,
		Args:        []string{initArg0},
		Env:         initproc.InitEnv,
		Stdin:       stdin,
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  initDescriptors(init, confR, statusW, extra),
		SysProcAttr: attr,
		// The task's tree dies with its pid namespace; a descriptor held by
		// something else must not hang Wait.
		WaitDelay: time.Second,
	}
	if attr.Pdeathsig == 0 {
		attr.Pdeathsig = syscall.SIGKILL
	}
	if cgroupV2Dir != "" {
		fd, err := unix.Open(cgroupV2Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			confR.Close()
			confW.Close()
			statusR.Close()
			statusW.Close()
			return nil, &SetupError{Step: "open cgroup", Path: cgroupV2Dir, Err: err}
		}
		defer unix.Close(fd)
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
	s := &startedInit{confW: confW, statusR: statusR, start: time.Now()}
	born, err := cg.CloneInside(cmd.Start)
	s.born = born || attr.UseCgroupFD
	confR.Close()
	statusW.Close()
	if err != nil {
		s.close()
		if attr.UseCgroupFD && errors.Is(err, syscall.ENOSYS) {
			// clone3 refused (a container's seccomp profile answers ENOSYS
			// so callers fall back to clone): start without CLONE_INTO_CGROUP;
			// the init is then attached through cgroup.procs before it reads
			// its config (finish and prepare force that).
			attr.UseCgroupFD, attr.CgroupFD = false, 0
			return startInitIn(init, attr, cg, "", stdin, stdout, stderr, extra...)
		}
		return nil, &SetupError{Step: stepStartInit, Path: init.path, Err: err}
	}
	s.proc = newCmdInit(cmd)
	// Before its config is sent, so before it can load a seccomp filter.
	s.registered = cmd.Process.Pid
	registerInit(s.registered)
	return s, nil
}

// setupTimeout bounds a run's setup, from the init's start to the
// command's exec (Limits.Wall counts from there): a setup still not done
// then is stuck, and the run fails with a *SetupError (step "setup").
const setupTimeout = 30 * time.Second

// finish attaches the init to its cgroup, sends its config, and waits for
// the task tree to end (on the thread that started the init).
func (s *startedInit) finish(ctx context.Context, l initLaunch) (*Result, error) {
	kill := func() { s.proc.kill(l.killTree) }
	fail := func(err error) (*Result, error) {
		s.kill(l.killTree)
		return nil, err
	}
	done := make(chan struct{})
	defer close(done)
	running := make(chan struct{}) // closed once the command is exec'd
	var setupTimedOut, timedOut, cancelled atomic.Bool
	go func() {
		// The wall limit is the command's: it counts from its exec. Until
		// then the setup has its own bound, so that a slow setup on a busy
		// host does not eat a short limit (and a stuck one still ends).
		setup := time.NewTimer(setupTimeout)
		defer setup.Stop()
		select {
		case <-setup.C:
			setupTimedOut.Store(true)
			kill()
			return
		case <-ctx.Done():
			cancelled.Store(true)
			kill()
			return
		case <-done:
			return
		case <-running:
		}
		wall := time.NewTimer(l.spec.Limits.Wall)
		defer wall.Stop()
		select {
		case <-wall.C:
			timedOut.Store(true)
			kill()
		case <-ctx.Done():
			cancelled.Store(true)
			kill()
		case <-done:
		}
	}()
	cfg := l.cfg
	if !s.attached && l.cgroup.NeedsAttach(s.bornInCgroup()) {
		// Attaching waits for an RCU grace period on cgroup v1 (much of a
		// cold start): the init builds its view meanwhile (prepare),
		// and the task follows once the init is in its cgroup.
		if err := s.prepare(l.cgroup, &initConfig{Prepare: true, NS: cfg.NS, Landlock: cfg.Landlock}); err != nil {
			if setupTimedOut.Load() || ctx.Err() != nil {
				return fail(&SetupError{Step: "setup", Err: context.DeadlineExceeded})
			}
			return fail(err)
		}
		task := *cfg
		task.NS = nil // built
		cfg = &task
	}
	// The init is in its cgroup (attached, or born there) before it
	// reads its task.
	if err := writeJSON(s.confW, cfg); err != nil {
		return fail(&SetupError{Step: "send config", Err: err})
	}

	status, err := io.ReadAll(s.statusR)
	if err != nil {
		return fail(&SetupError{Step: "read init status", Err: err})
	}
	execErr, se := parseStatus(status, l.cfg.Argv)
	if se != nil {
		if len(status) == 0 && (setupTimedOut.Load() || ctx.Err() != nil) {
			return fail(&SetupError{Step: "setup", Err: context.DeadlineExceeded})
		}
		return fail(se)
	}
	close(running)

	ended := func() {}
	if execErr == nil {
		ended = observeRun(l.spec, s.proc.hostPID(), l.cgroup) // Spec.Started
	}
	end, waitErr := s.proc.reap(kill) // nothing of the run outlives it
	ended()
	if waitErr != nil {
		return nil, waitErr
	}
	if setupTimedOut.Load() {
		// The setup's bound passed just as the command was exec'd.
		return nil, &SetupError{Step: "setup", Err: context.DeadlineExceeded}
	}
	ownCPU := end.ownCPU
	res := resultFromEnd(end, time.Since(s.start))
	res.ExecError = execErr
	switch {
	case timedOut.Load():
		res.Timeout = TimeoutWall
	case cpuLimitEnded(res.Signal, ownCPU, l.spec.Limits.CPU) && !cancelled.Load():
		res.Timeout = TimeoutCPU
	}
	res.TimedOut = res.Timeout != ""
	res.OOMKills = l.cgroup.OOMKills()
	if peak := l.cgroup.PeakMemory(); peak > 0 {
		res.PeakMemory = peak
	}
	return res, nil
}

// kill kills the init (or its run's tree, killTree) and reaps it.
func (s *startedInit) kill(killTree func(*os.Process)) {
	kill := func() { s.proc.kill(killTree) }
	kill()
	_, _ = s.proc.reap(kill)
}

// bornInCgroup: the init was cloned into its cgroup (v2 CgroupFD, v1
// CloneInside).
func (s *startedInit) bornInCgroup() bool { return s.born }

// prepare sends first, the init's prepare phase (a Config with Prepare:
// the view, or a template's child's fresh mounts, and the Landlock policy
// to build ahead), attaches the init to its cgroup while the init builds
// them, and waits until the init reports it built (or names the step that
// failed). The init runs only its own code before it is in its cgroup:
// the task comes after prepare, in a second config (finish).
func (s *startedInit) prepare(cg *cgroup.Group, first *initConfig) error {
	if err := writeJSON(s.confW, first); err != nil {
		return &SetupError{Step: "send view", Err: err}
	}
	if err := cg.Attach(s.proc.hostPID(), s.bornInCgroup()); err != nil {
		return &SetupError{Step: "attach cgroup", Err: err}
	}
	s.attached = true
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

// writeJSON sends one message to the init in a single write.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// parseStatus reads what the init reported on its status pipe: StatusExec
// alone (the command runs), StatusExec and a StatusExecFailed record (the
// command could not be executed: the task's failure), or a setup failure
// (a JSON Failure, a StatusLimitFailed record, or nothing: the init died).
func parseStatus(status []byte, argv []string) (*ExecError, *SetupError) {
	if len(status) == 0 || status[0] != initStatusExec {
		return nil, parseFailure(status)
	}
	switch tag, _, errno, ok := initproc.DecodeReport(status[1:]); {
	case len(status) == 1:
		return nil, nil
	case ok && tag == initproc.StatusExecFailed && len(argv) > 0:
		return &ExecError{Command: argv[0], Errno: errno}, nil
	}
	return nil, &SetupError{Step: "init", Err: fmt.Errorf("unexpected status report %q", status)}
}

// parseFailure turns the init's failure report into a *SetupError; no
// report means the init died during setup.
func parseFailure(status []byte) *SetupError {
	if tag, res, errno, ok := initproc.DecodeReport(status); ok && tag == initproc.StatusLimitFailed {
		return &SetupError{Step: "rlimit", Path: initproc.RlimitName(int(res)), Err: errno}
	}
	var f initFailure
	if len(status) == 0 || json.Unmarshal(status, &f) != nil {
		return &SetupError{Step: "init", Err: errInitDied}
	}
	return setupErrorOf(f)
}

// cpuLimitEnded reports whether the command was ended by its CPU-time
// limit (RLIMIT_CPU, soft limit in whole seconds, SIGKILL one second
// later): SIGXCPU, or, for a command that does not die of SIGXCPU (pid 1
// of its pid namespace ignores it; so does a program that blocks it),
// SIGKILL after its own CPU time reached the soft limit. ownCPU is the
// command's own time, not its children's (the rlimit is per process).
func cpuLimitEnded(signal string, ownCPU, limit time.Duration) bool {
	soft := time.Duration(cpuSeconds(limit)) * time.Second
	return signal == "SIGXCPU" || (signal == "SIGKILL" && ownCPU >= soft)
}

// zombieCPU waits (without reaping) for pid to exit and returns its own
// user + system time from /proc/<pid>/stat, 0 when it cannot be read.
func zombieCPU(pid int) time.Duration {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return 0
		}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return initproc.StatCPU(b)
}
