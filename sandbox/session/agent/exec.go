package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/warrenhq/warren/sandbox/internal/reap"
	"github.com/warrenhq/warren/sandbox/session/internal/wire"
	"golang.org/x/sys/unix"
)

// exec starts the command of exec id. A command that cannot be started is
// reported as a shell would: its message on the exec's stderr and exit
// status 127 (not found) or 126 (anything else), without a Started frame.
func (a *agent) exec(id uint32, m wire.Exec) error {
	a.mu.Lock()
	_, dup := a.execs[id]
	a.mu.Unlock()
	if dup {
		return a.refuse(id, wire.CodeInvalid, fmt.Sprintf("exec id %d is in use", id))
	}
	env := mergeEnv(os.Environ(), m.Env)
	cwd := m.Cwd
	if cwd == "" {
		cwd = a.home
	} else if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(a.home, cwd)
	}
	path, err := lookPath(m.Argv[0], envValue(env, "PATH"), cwd)
	if err != nil {
		return a.failStart(id, fmt.Sprintf("%s: command not found", m.Argv[0]), 127)
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return a.failStart(id, fmt.Sprintf("cwd %s: not a directory", m.Cwd), 126)
	}
	st, err := newStdio(m)
	if err != nil {
		return a.failStart(id, fmt.Sprintf("%s: %v", m.Argv[0], err), 126)
	}
	p := &proc{id: id, argv: m.Argv, bg: m.Background, pidfd: -1, exited: make(chan struct{})}
	a.mu.Lock()
	sp, err := spawn(spawnSpec{path: path, argv: m.Argv, env: env, dir: cwd, fds: st.child()})
	pid := sp.pid
	if err == nil {
		p.pid, p.pidfd, p.started = pid, sp.pidfd, time.Now()
		a.procs[pid] = p
		a.execs[id] = p
		if m.Timeout > 0 {
			p.timer = time.AfterFunc(m.Timeout, func() { a.timeout(p) })
		}
	}
	a.mu.Unlock()
	st.closeChild()
	if err != nil {
		st.closeParent()
		code := int64(126)
		if errors.Is(err, unix.ENOENT) {
			code = 127
		}
		return a.failStart(id, fmt.Sprintf("%s: cannot execute: %v", m.Argv[0], err), code)
	}
	if err := a.send(wire.TypeStarted, id, wire.Started{PID: int64(pid)}.Marshal()); err != nil {
		return err
	}
	go a.watch(p, st)
	return nil
}

func (a *agent) failStart(id uint32, msg string, code int64) error {
	if err := a.send(wire.TypeStderr, id, []byte("warren: "+msg+"\n")); err != nil {
		return err
	}
	return a.send(wire.TypeExit, id, wire.Exit{ExitCode: code}.Marshal())
}

// timeout kills the command's tree once its timeout passes.
func (a *agent) timeout(p *proc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-p.exited:
		return
	default:
	}
	p.timedOut = true
	a.killTree(p)
}

// cancel kills the tree of exec id (the host gave up on it).
func (a *agent) cancel(id uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.execs[id]; p != nil {
		select {
		case <-p.exited:
		default:
			a.killTree(p)
		}
	}
}

// watch streams the command's output, waits for it and reports its exit.
func (a *agent) watch(p *proc, st *stdio) {
	var pumps sync.WaitGroup
	for _, o := range []struct {
		f *os.File
		t wire.Type
	}{{st.stdout, wire.TypeStdout}, {st.stderr, wire.TypeStderr}} {
		if o.f == nil {
			continue
		}
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			a.pump(p.id, o.t, o.f)
		}()
	}
	drained := make(chan struct{})
	go func() { pumps.Wait(); close(drained) }()
	a.awaitExit(p)
	grace := drainGrace
	a.mu.Lock()
	if p.killed {
		grace = killedDrainGrace
	}
	a.mu.Unlock()
	select {
	case <-drained:
	case <-time.After(grace):
		st.closeParent() // a child holds the pipes: stop reading
		<-drained
	}
	st.closeParent()
	a.mu.Lock()
	delete(a.execs, p.id)
	timedOut := p.timedOut
	a.mu.Unlock()
	e := wire.Exit{ExitCode: int64(p.status.ExitStatus()), TimedOut: timedOut, Wall: time.Since(p.started)}
	if p.status.Signaled() {
		e.ExitCode, e.Signal = -1, unix.SignalName(p.status.Signal())
	}
	_ = a.send(wire.TypeExit, p.id, e.Marshal())
}

// reapTick is how often a command's watch reaps on its own: SIGCHLD
// drives the reaping, and the watch never depends on one notification.
const reapTick = 250 * time.Millisecond

// awaitExit returns once p is reaped. A command that exited while a
// thread of it is traced by another process (its own child, say) is not
// reported ended until that tracer lets go: the tracer is killed.
func (a *agent) awaitExit(p *proc) {
	t := time.NewTicker(reapTick)
	defer t.Stop()
	for {
		select {
		case <-p.exited:
			return
		case <-t.C:
			a.reap()
			if reap.Zombie(p.pid) {
				a.killTracers(p)
			}
		}
	}
}

// killTracers SIGKILLs the processes that trace a thread of p (p exited,
// not reaped: its pid is its own), each through a pidfd opened while it
// still traces one.
func (a *agent) killTracers(p *proc) {
	for _, tp := range reap.Tracers(p.pid) {
		fd, err := unix.PidfdOpen(tp, 0)
		if err != nil {
			continue
		}
		if slices.Contains(reap.Tracers(p.pid), tp) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		_ = unix.Close(fd)
	}
}

func (a *agent) pump(id uint32, t wire.Type, f *os.File) {
	buf := make([]byte, wire.ChunkSize)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if a.send(t, id, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stdio holds a command's standard files: the child's ends and the
// agent's.
type stdio struct {
	in, out, err   *os.File // child ends
	stdout, stderr *os.File // agent's read ends (nil in the background)
	once           sync.Once
}

func newStdio(m wire.Exec) (*stdio, error) {
	s := &stdio{}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s.in, s.out, s.err = null, null, null
	if len(m.Stdin) > 0 {
		r, w, err := os.Pipe()
		if err != nil {
			_ = null.Close()
			return nil, err
		}
		s.in = r
		go func() {
			_, _ = w.Write(m.Stdin)
			_ = w.Close()
		}()
	}
	if !m.Background {
		for _, dst := range []struct{ child, parent **os.File }{{&s.out, &s.stdout}, {&s.err, &s.stderr}} {
			r, w, err := os.Pipe()
			if err != nil {
				s.closeChild()
				s.closeParent()
				return nil, err
			}
			*dst.child, *dst.parent = w, r
		}
	}
	return s, nil
}

func (s *stdio) child() [3]int { return [3]int{int(s.in.Fd()), int(s.out.Fd()), int(s.err.Fd())} }

// closeChild closes the agent's copies of the child's ends (the null file
// may be shared by several).
func (s *stdio) closeChild() {
	for _, f := range []*os.File{s.in, s.out, s.err} {
		_ = f.Close() // a second Close of a shared file is a harmless error
	}
}

func (s *stdio) closeParent() {
	s.once.Do(func() {
		for _, f := range []*os.File{s.stdout, s.stderr} {
			if f != nil {
				_ = f.Close()
			}
		}
	})
}

// mergeEnv returns base with each KEY=VALUE of over set (over wins).
func mergeEnv(base, over []string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range append(base, over...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// lookPath resolves name as a shell does: a name with a slash as it is
// (relative to cwd), else the first executable regular file on path.
func lookPath(name, path, cwd string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", io.EOF
}
