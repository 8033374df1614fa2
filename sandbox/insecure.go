package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/files"
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

	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	if filepath.Base(spec.Argv[0]) == spec.Argv[0] {
		// Resolve against the sandbox PATH, not the worker's.
		p, errno := initproc.LookPath(spec.Argv[0], minimalPath)
		if errno != 0 {
			return notExecuted(spec.Argv[0], errno, "none (insecure)"), nil
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
			return notExecuted(spec.Argv[0], errno, "none (insecure)"), nil
		}
		return nil, &SetupError{Step: "start", Path: cmd.Path, Err: err}
	}
	pgid := cmd.Process.Pid
	killGroup := func() { _ = unix.Kill(-pgid, unix.SIGKILL) }

	timer := time.NewTimer(spec.Limits.Wall)
	defer timer.Stop()
	done := make(chan struct{})
	var timedOut atomic.Bool
	go func() {
		select {
		case <-timer.C:
			timedOut.Store(true)
			killGroup()
		case <-ctx.Done():
			killGroup()
		case <-done:
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	killGroup() // leftovers of the group die with the task
	if spec.Finished != nil {
		spec.Finished(scratch)
	}
	res := resultFromState(cmd.ProcessState, time.Since(start))
	if timedOut.Load() {
		res.TimedOut, res.Timeout = true, TimeoutWall
	}
	res.InForce = "none (insecure)"
	if waitErr != nil && cmd.ProcessState == nil {
		return nil, fmt.Errorf("sandbox: wait: %w", waitErr)
	}
	return res, nil
}

func resultFromState(ps *os.ProcessState, wall time.Duration) *Result {
	res := &Result{ExitCode: ps.ExitCode(), Wall: wall}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode = -1
		res.Signal = unix.SignalName(ws.Signal())
	}
	res.CPU = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		res.PeakMemory = ru.Maxrss * 1024
	}
	return res
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
	if err := writeFiles(dir, spec.Files); err != nil {
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

// writeFiles writes files under dir through the files API: paths are
// rooted at dir, and no symlink, FIFO, device or hard link is followed.
func writeFiles(dir string, fs map[string][]byte) error {
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	home, err := files.Open(dir, files.NoOwner)
	if err != nil {
		return &SetupError{Step: "open scratch", Path: dir, Err: err}
	}
	defer home.Close()
	for _, n := range names {
		if _, err := home.Write(context.Background(), n, fs[n], files.WriteOptions{Parents: true}); err != nil {
			return &SetupError{Step: "write files", Path: n, Err: err}
		}
	}
	return nil
}

// minimalPath is the PATH every sandbox gets (pruned to what exists by the
// isolated modes).
const minimalPath = "/usr/local/bin:/usr/bin:/bin"

func buildEnv(extra map[string]string, home, tmp string) []string {
	env := []string{"PATH=" + minimalPath, "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8"}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "HOME", "TMPDIR", "PWD":
			continue
		case "PATH", "LANG":
			// Replace the default.
			for i, e := range env {
				if len(e) > len(k) && e[:len(k)+1] == k+"=" {
					env[i] = k + "=" + extra[k]
				}
			}
			continue
		}
		env = append(env, k+"="+extra[k])
	}
	return env
}
