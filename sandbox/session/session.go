package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
	"github.com/warrenhq/warren/sandbox/session/internal/wire"
)

// Runner runs one sandbox; *sandbox.Runner is one.
type Runner interface {
	Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error)
}

// Spec describes a session.
type Spec struct {
	// Sandbox is the sandbox the session lives in: Isolation, Network, Env
	// (given to the agent, so to every command; held in memory only),
	// ReadOnly, Limits (Wall is the session's TTL: defaults to the
	// runner's default wall limit, 5 minutes unless configured). Start sets
	// Argv, Stdin, Stdout, Stderr and Scratch, and adds the agent to
	// ReadOnly.
	Sandbox sandbox.Spec
	// Home is a host directory used as the sandbox's home (the run's
	// Spec.Scratch): files written there by commands persist across execs
	// and are served by the file methods. It is created (0700) if missing
	// and left in place by Close with its contents, handed back to its
	// owner. Its parent directories must let the sandbox's uid pass (x for
	// others, as a root worker's scratch root is 0711) for the Landlock
	// mode. Such a session always starts a cold sandbox, and no tmpfs
	// bounds its home: Limits.Disk holds only the file methods, which
	// count the home's usage (doc.go). Defaults to none:
	// the home is the run's own scratch directory, which the runner's
	// teardown removes, and the session can take a warm sandbox
	// (Config.Prestart) like a task.
	Home string
	// AgentPath is the agent binary (cmd/warren-sandbox-agent, static).
	// Defaults to warren-sandbox-agent next to the running executable. It
	// is bound read-only into the sandbox at the same path, so a root
	// worker's sandbox uids must be able to reach and execute it: every
	// parent directory searchable by others (Start checks, ErrAgent).
	AgentPath string
}

// Session is one live stateful sandbox. Its methods are safe for
// concurrent use.
type Session struct {
	home string // set by Start (Spec.Home) or at the hello (the run's scratch)
	// lent: the agent's pipe ends are files lent to the sandbox, closed once
	// the agent holds its own; else the runner copies to and from them.
	lent  bool
	files *files.Home
	hello wire.Hello

	// viewMu guards view, the home the runner handed over (HomeReady)
	// before the agent ran, and viewErr, why it could not be opened.
	viewMu  sync.Mutex
	view    *files.Home
	viewErr error

	toAgent   *os.File // write end of the agent's stdin
	childIn   *os.File // the agent's ends, closed once it runs
	childOut  *os.File
	fromAgent *os.File
	childOnce sync.Once
	stderr    *tailBuffer
	cancel    context.CancelFunc

	wmu sync.Mutex // serialises frames to the agent

	mu    sync.Mutex
	calls map[uint32]*call
	// background counts the live background commands (calls with live
	// set), under mu.
	background int
	nextID     uint32
	gone       error // set once the sandbox has ended
	result     *sandbox.Result
	protoErr   error

	closing   atomic.Bool
	closeOnce sync.Once
	running   atomic.Int64
	last      atomic.Int64 // unix nanoseconds

	helloCh chan error
	done    chan struct{}
	wg      sync.WaitGroup
}

// Start starts the sandbox with the agent in it and returns once the agent
// has answered (its hello). ctx bounds only the start; the session lives
// until Close, its TTL or its death. A sandbox that could not start yields
// the runner's error (e.g. a *sandbox.SetupError).
func Start(ctx context.Context, r Runner, spec Spec) (*Session, error) {
	if spec.AgentPath == "" {
		spec.AgentPath = defaultAgentPath()
	}
	if err := checkAgent(spec.AgentPath); err != nil {
		return nil, err
	}
	s := &Session{calls: map[uint32]*call{}, helloCh: make(chan error, 1), done: make(chan struct{}), stderr: &tailBuffer{max: 4 << 10}}
	if spec.Home != "" {
		if err := os.MkdirAll(spec.Home, 0o700); err != nil {
			return nil, fmt.Errorf("session: creating the home %s: %w", spec.Home, err)
		}
		s.home, s.lent = spec.Home, true
	}
	if err := s.pipes(); err != nil {
		return nil, err
	}
	sb := spec.Sandbox
	sb.Argv = []string{spec.AgentPath}
	sb.Scratch = s.home
	sb.Stdin, sb.Stdout, sb.Stderr = s.childIn, s.childOut, s.stderr
	if !s.lent {
		// Not files: the runner may serve the run from a warm sandbox,
		// whose stdio it copies.
		sb.Stdin, sb.Stdout = struct{ io.Reader }{s.childIn}, agentOut{s}
	}
	sb.ReadOnly = append(slices.Clone(sb.ReadOnly), spec.AgentPath)
	sb.HomeReady = s.homeReady(sb.HomeReady)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.touch()
	var res *sandbox.Result
	var runErr error
	ran := make(chan struct{})
	readerDone := make(chan struct{})
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		defer close(ran)
		res, runErr = r.Run(runCtx, sb)
		// The agent is gone: the stream ends once our copies close.
		s.closeChildEnds()
	}()
	go func() {
		defer s.wg.Done()
		defer close(readerDone)
		s.read()
	}()
	go func() {
		defer s.wg.Done()
		<-ran
		<-readerDone
		s.finish(res, runErr)
	}()
	select {
	case err := <-s.helloCh:
		if err == nil {
			err = s.openFiles()
		} else {
			<-s.done
			err = s.startError()
		}
		if err != nil {
			_ = s.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		return s, nil
	case <-s.done:
		err := s.startError()
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	case <-ctx.Done():
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, ctx.Err()
	}
}

// pipes creates the agent's stdin and stdout.
func (s *Session) pipes() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("session: pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return fmt.Errorf("session: pipe: %w", err)
	}
	s.childIn, s.toAgent, s.fromAgent, s.childOut = inR, inW, outR, outW
	return nil
}

// closeChildEnds closes this process's copies of the agent's pipe ends:
// once the agent runs (lent: it has its own) or has ended, so the stream
// from it ends when it does (and a runner's copy from them returns).
func (s *Session) closeChildEnds() {
	s.childOnce.Do(func() {
		_ = s.childIn.Close()
		_ = s.childOut.Close()
	})
}

// agentOut is the agent's stdout when the runner copies it (not lent):
// the runner's copy runs as its ReadFrom, so the copy's end says the
// agent's stream has ended. The agent's ends then close: the stream from
// it ends here, and a runner that waits for its copy into the agent's
// stdin (a cold run's exec.Cmd does) is released.
type agentOut struct{ s *Session }

func (o agentOut) Write(p []byte) (int, error) { return o.s.childOut.Write(p) }

func (o agentOut) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(o.s.childOut, r)
	o.s.closeChildEnds()
	return n, err
}

// homeReady is the run's HomeReady: it opens the home as the session's
// commands will see it (sandbox.HomeView), then calls the caller's own.
func (s *Session) homeReady(next func(sandbox.HomeView) error) func(sandbox.HomeView) error {
	return func(v sandbox.HomeView) error {
		access := files.Chown
		if v.AsOwner {
			access = files.AsOwner
		}
		h, err := files.OpenAs(v.Dir, files.Owner{UID: v.UID, GID: v.GID}, access)
		if err == nil {
			// The file methods' writes count against the disk limit as
			// the commands' do: where no tmpfs holds the home to it, by
			// counting its usage.
			h.SetQuota(v.Quota)
		}
		s.viewMu.Lock()
		if s.view != nil {
			_ = s.view.Close() // a run retried after a failed setup hands it again
		}
		s.view, s.viewErr = h, err
		s.viewMu.Unlock()
		if err != nil {
			return fmt.Errorf("session: home: %w", err)
		}
		if next != nil {
			return next(v)
		}
		return nil
	}
}

// openFiles takes the home the runner handed over before the agent ran
// (homeReady) for the file methods: the directory the commands see as
// $HOME, never a path the agent reports (on a slot, the task's own tmpfs
// over the slot's directory, which only the sandbox's mount namespace
// shows).
func (s *Session) openFiles() error {
	s.viewMu.Lock()
	h, err := s.view, s.viewErr
	s.view = nil
	s.viewMu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("session: home: %w", err)
	case h == nil:
		return errors.New("session: the runner handed no home (sandbox.Spec.HomeReady was not called)")
	}
	if !s.lent && !filepath.IsAbs(s.home) {
		_ = h.Close()
		return fmt.Errorf("%w: the agent's home %q is not an absolute path", ErrAgent, s.home)
	}
	s.files = h
	return nil
}

// startError is why the sandbox ended before the agent said hello.
func (s *Session) startError() error {
	var g *GoneError
	if errors.As(s.gone, &g) && g.Reason == GoneRunner && g.Err != nil {
		return g.Err // the runner's own error: a *sandbox.SetupError, ErrUnavailable
	}
	return fmt.Errorf("%w: the agent ended before it answered: %v", ErrAgent, s.gone)
}

// finish records why the sandbox ended and fails every call in flight.
func (s *Session) finish(res *sandbox.Result, runErr error) {
	g := &GoneError{}
	s.mu.Lock()
	proto := s.protoErr
	s.mu.Unlock()
	switch {
	case s.closing.Load():
		g.Reason = GoneClosed
	case runErr != nil:
		g.Reason, g.Err = GoneRunner, runErr
	case proto != nil:
		g.Reason, g.Err = GoneProtocol, proto
	case res.TimedOut && res.Timeout == sandbox.TimeoutCPU:
		g.Reason = GoneCPU
	case res.TimedOut:
		g.Reason = GoneTTL
	case res.OOMKills > 0 && res.Signal == "SIGKILL":
		g.Reason = GoneOOM
	default:
		g.Reason = GoneAgentExited
	}
	if res != nil {
		g.ExitCode, g.Signal = res.ExitCode, res.Signal
		if g.Reason == GoneAgentExited {
			g.Detail = fmt.Sprintf("agent exit code %d", res.ExitCode)
			if res.Signal != "" {
				g.Detail = "agent killed by " + res.Signal
			}
			if res.ExecError != nil {
				g.Detail = res.ExecError.Error()
			}
			if tail := s.stderr.summary(); tail != "" {
				g.Detail += "; agent stderr: " + tail
			}
		}
	}
	s.mu.Lock()
	s.gone, s.result = g, res
	calls := s.calls
	s.calls, s.background = map[uint32]*call{}, 0
	s.mu.Unlock()
	for _, c := range calls {
		c.fail(g)
	}
	select {
	case s.helloCh <- g:
	default:
	}
	close(s.done)
}

// Close ends the sandbox (the agent's stdin closes and the runner kills
// every process in it) and waits for its teardown, which removes the
// run's own scratch directory (a Spec.Home stays), and for the session's
// goroutines. It is idempotent; when ctx ends first it returns ctx.Err()
// and may be called again.
func (s *Session) Close(ctx context.Context) error {
	s.closing.Store(true)
	_ = s.toAgent.Close() // also ends a runner's copy to the agent
	s.cancel()
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.closeOnce.Do(func() {
		s.wg.Wait()
		_ = s.toAgent.Close()
		_ = s.fromAgent.Close()
		if s.files != nil {
			_ = s.files.Close()
		}
		s.viewMu.Lock()
		if s.view != nil {
			_ = s.view.Close() // handed over, but the agent never said hello
			s.view = nil
		}
		s.viewMu.Unlock()
	})
	return nil
}
