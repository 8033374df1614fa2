// Package hostsession is sessions WITHOUT isolation: a session whose
// commands run as plain host processes of the worker's user, each in its
// own process group, in a home of their own, with the real files API
// (sandbox/files) on that home. It is what a worker started with
// --isolation none --insecure-no-isolation serves (as its tasks run
// unsandboxed), and the stand-in for the sandbox session primitive
// (package sandbox/session) in tests of the session manager, the client
// and the CLI. It isolates nothing: never for untrusted code.
package hostsession

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/files"
	"github.com/warrenhq/warren/worker"
)

// ErrClosed is the error of an ended session.
var ErrClosed = errors.New("hostsession: session closed")

// Start is a worker.SessionFactory.
func Start(_ context.Context, _ worker.Runner, spec worker.SessionSpec) (worker.SessionSandbox, error) {
	if err := os.MkdirAll(spec.Home, 0o700); err != nil {
		return nil, err
	}
	h, err := files.Open(spec.Home, files.NoOwner)
	if err != nil {
		return nil, err
	}
	return &Local{home: spec.Home, env: maps.Clone(spec.Sandbox.Env), h: h, last: time.Now(),
		procs: map[int]*proc{}, done: make(chan struct{})}, nil
}

// Local is a session of host processes.
type Local struct {
	home string
	env  map[string]string
	h    *files.Home

	mu     sync.Mutex
	procs  map[int]*proc
	fg     int // foreground commands in flight
	last   time.Time
	closed bool
	wg     sync.WaitGroup

	done chan struct{}
	once sync.Once
}

type proc struct {
	p  worker.SessionProcess
	ex chan struct{}
}

func (l *Local) environ(extra map[string]string) []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + l.home, "TMPDIR=" + l.home}
	for _, m := range []map[string]string{l.env, extra} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			env = append(env, k+"="+m[k])
		}
	}
	return env
}

// Exec runs req; a background command returns once started.
func (l *Local) Exec(ctx context.Context, req worker.SessionExec, stdout, stderr io.Writer) (worker.SessionExit, error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Dir = filepath.Join(l.home, req.Cwd)
	cmd.Env = l.environ(req.Env)
	cmd.Stdin = bytes.NewReader(req.Stdin)
	if !req.Background {
		cmd.Stdout, cmd.Stderr = stdout, stderr
	}
	// Its own group (kill reaches its children); killed if the worker
	// dies (its children outlive it: this mode isolates nothing).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return worker.SessionExit{}, ErrClosed
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		l.mu.Unlock()
		return worker.SessionExit{}, err
	}
	pr := &proc{p: worker.SessionProcess{PID: cmd.Process.Pid, Argv: req.Argv, Started: start, Background: req.Background}, ex: make(chan struct{})}
	l.procs[pr.p.PID] = pr
	l.last = start
	l.wg.Add(1)
	l.mu.Unlock()
	var res worker.SessionExit
	go func() {
		defer l.wg.Done()
		err := cmd.Wait()
		res = worker.SessionExit{PID: pr.p.PID, ExitCode: cmd.ProcessState.ExitCode(), Wall: time.Since(start)}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = signalName(ws.Signal())
		}
		_ = err
		l.mu.Lock()
		delete(l.procs, pr.p.PID)
		l.last = time.Now()
		l.mu.Unlock()
		close(pr.ex)
	}()
	if req.Background {
		return worker.SessionExit{PID: pr.p.PID}, nil
	}
	l.mu.Lock()
	l.fg++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.fg--
		l.mu.Unlock()
	}()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-pr.ex:
		return res, nil
	case <-timeout:
		_ = syscall.Kill(-pr.p.PID, syscall.SIGKILL)
		<-pr.ex
		res.TimedOut = true
		return res, nil
	case <-ctx.Done():
		_ = syscall.Kill(-pr.p.PID, syscall.SIGKILL)
		<-pr.ex
		return res, ctx.Err()
	case <-l.done:
		<-pr.ex
		return res, ErrClosed
	}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return "SIG" + s.String()
}

// Ps lists the running commands by pid.
func (l *Local) Ps(context.Context) ([]worker.SessionProcess, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]worker.SessionProcess, 0, len(l.procs))
	for _, pid := range slices.Sorted(maps.Keys(l.procs)) {
		out = append(out, l.procs[pid].p)
	}
	return out, nil
}

// Kill signals a command's process group; ESRCH for a pid not its own.
func (l *Local) Kill(_ context.Context, pid int, sig syscall.Signal) error {
	l.mu.Lock()
	_, ok := l.procs[pid]
	l.mu.Unlock()
	if !ok {
		return syscall.ESRCH
	}
	return syscall.Kill(-pid, sig)
}

// Files is the home's files API.
func (l *Local) Files() worker.SessionFiles { return l.h }

// Running counts foreground commands in flight, as sandbox/session does.
func (l *Local) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fg
}

// LastActivity is when a command last started or ended.
func (l *Local) LastActivity() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Close kills every command, waits for them and removes the home.
func (l *Local) Close(context.Context) error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		for pid := range l.procs {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		l.mu.Unlock()
		close(l.done)
		l.wg.Wait()
		_ = l.h.Close()
		err = os.RemoveAll(l.home)
	})
	return err
}

// Done is closed by Close.
func (l *Local) Done() <-chan struct{} { return l.done }

// Err is ErrClosed once closed.
func (l *Local) Err() error {
	select {
	case <-l.done:
		return ErrClosed
	default:
		return nil
	}
}
