package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// runInsecure runs a command with no isolation at all. It still enforces
// what does not need the kernel's help: a cleared environment, a private
// scratch directory, its own process group killed on timeout and on exit,
// and the wall limit. A process that calls setsid escapes the group kill:
// that is one of the reasons this mode is insecure.
func (r *Runner) runInsecure(ctx context.Context, spec Spec) (*Result, error) {
	scratch, cleanup, err := r.prepareScratch(spec)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// No tmpfs bounds the home here: a disk limit is the files' count.
	home := scratchDir{path: scratch}
	if err := callHomeReady(spec, HomeView{Dir: scratch, UID: -1, GID: -1, Quota: home.fileQuota(spec.Limits.Disk)}); err != nil {
		return nil, err
	}

	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	if filepath.Base(spec.Argv[0]) == spec.Argv[0] {
		// Resolve against the sandbox PATH, not the worker's.
		p, errno := initproc.LookPath(spec.Argv[0], minimalPath)
		if errno != 0 {
			return notExecuted(spec.Argv[0], errno, inForceNone), nil
		}
		cmd.Path = p
	}
	cmd.Env = buildEnv(spec.Env, scratch, filepath.Join(scratch, ".tmp"))
	cmd.Dir = filepath.Join(scratch, spec.Cwd)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild holding the output pipes must not hang Wait.
	cmd.WaitDelay = time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && isExecErrno(errno) {
			// execve of the command failed in the child: the task's fault.
			return notExecuted(spec.Argv[0], errno, inForceNone), nil
		}
		return nil, &SetupError{Step: "start", Path: cmd.Path, Err: err}
	}
	pgid := cmd.Process.Pid
	killGroup := func() { _ = unix.Kill(-pgid, unix.SIGKILL) }
	// The command is the worker's child: its end is watched as a run's
	// init's is (proc_exit.go), so a thread it makes the worker's tracee
	// cannot hold it back.
	watch := watchExit(cmd.Process.Pid)
	defer watch.close()
	kill := func() {
		killGroup()
		_ = cmd.Process.Kill() // a command that left its group
		watch.killed()
	}

	timer := time.NewTimer(spec.Limits.Wall)
	defer timer.Stop()
	done := make(chan struct{})
	var timedOut atomic.Bool
	go func() {
		select {
		case <-timer.C:
			timedOut.Store(true)
			kill()
		case <-ctx.Done():
			kill()
		case <-done:
		}
	}()
	err = watch.wait(kill)
	close(done)
	if err != nil {
		return nil, err
	}
	killGroup() // leftovers of the group die with the task
	waitErr := cmd.Wait()
	if spec.Finished != nil {
		spec.Finished(scratch)
	}
	res := resultFromState(cmd.ProcessState, time.Since(start))
	if timedOut.Load() {
		res.TimedOut, res.Timeout = true, TimeoutWall
	}
	res.InForce = inForceNone
	if waitErr != nil && cmd.ProcessState == nil {
		return nil, fmt.Errorf("sandbox: wait: %w", waitErr)
	}
	return res, nil
}

// prepareScratch creates the run's scratch directory (or uses spec.Scratch)
// and writes spec.Files into it.
func (r *Runner) prepareScratch(spec Spec) (string, func(), error) {
	if spec.Scratch != "" {
		return spec.Scratch, func() {}, nil
	}
	dir, err := os.MkdirTemp(r.cfg.ScratchRoot, scratchPrefix())
	if err != nil {
		return "", nil, &SetupError{Step: "create scratch", Path: r.cfg.ScratchRoot, Err: err}
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	if err := os.Mkdir(filepath.Join(dir, ".tmp"), 0o700); err != nil {
		cleanup()
		return "", nil, &SetupError{Step: "create tmp", Path: dir, Err: err}
	}
	// No tmpfs bounds the home: a disk limit holds the files by their count.
	home := scratchDir{path: dir}
	if err := writeFiles(dir, home.fileQuota(spec.Limits.Disk), spec.Files); err != nil {
		cleanup()
		return "", nil, err
	}
	if spec.Cwd != "" {
		if err := os.MkdirAll(filepath.Join(dir, spec.Cwd), 0o755); err != nil {
			cleanup()
			return "", nil, &SetupError{Step: "create cwd", Path: spec.Cwd, Err: err}
		}
	}
	return dir, cleanup, nil
}
