package session

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/session/internal/wire"
)

// ExecRequest is one command to run in the session.
type ExecRequest struct {
	// Argv is the command; Argv[0] is looked up on the PATH of its
	// environment when it has no slash.
	Argv []string
	// Env is set over the session's environment for this command only.
	Env map[string]string
	// Cwd is the working directory: relative to the home, or absolute
	// (inside the sandbox's view). Empty: the home.
	Cwd string
	// Stdin is the command's whole standard input (then end of file), at
	// most MaxStdin bytes. Empty: /dev/null.
	Stdin []byte
	// Background makes Exec return as soon as the command runs, with its
	// pid; its stdout and stderr are discarded (redirect inside the command,
	// e.g. sh -c 'srv >log 2>&1', to keep them in the home). It keeps
	// running across execs until it ends, Kill ends it or the session ends.
	Background bool
	// Timeout, when positive, SIGKILLs the command's whole tree once it
	// passes (ExecResult.TimedOut); the session lives on.
	Timeout time.Duration
}

// MaxStdin is the largest ExecRequest.Stdin.
const MaxStdin = wire.MaxStdin

// ExecResult is how a command ended (foreground) or that it started
// (background: only PID is set).
type ExecResult struct {
	// PID is the command's pid as the sandbox sees it (what Ps lists and
	// Kill takes); 0 when it could not be started.
	PID      int
	ExitCode int    // -1 when a signal ended it; 127 not found, 126 not executable
	Signal   string // e.g. "SIGKILL"
	TimedOut bool   // ExecRequest.Timeout ended it
	Wall     time.Duration
}

// Process is one live command the session started (Ps).
type Process struct {
	PID        int
	Argv       []string
	Started    time.Time
	Background bool
	// Ended is when a background command ended, zero while it runs; then
	// ExitCode is its exit status, or -1 with Signal the signal that
	// killed it.
	Ended    time.Time
	ExitCode int
	Signal   syscall.Signal
}

func (req ExecRequest) validate() error {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return fmt.Errorf("%w: argv: empty", ErrInvalidRequest)
	}
	for i, a := range req.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: argv[%d]: contains a NUL byte", ErrInvalidRequest, i)
		}
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: env[%q]: a name must be non-empty without '=' or NUL, a value without NUL", ErrInvalidRequest, k)
		}
	}
	if strings.IndexByte(req.Cwd, 0) >= 0 {
		return fmt.Errorf("%w: cwd: contains a NUL byte", ErrInvalidRequest)
	}
	if len(req.Stdin) > MaxStdin {
		return fmt.Errorf("%w: stdin: %d bytes over the %d-byte limit", ErrInvalidRequest, len(req.Stdin), MaxStdin)
	}
	if req.Timeout < 0 {
		return fmt.Errorf("%w: timeout: %v is negative", ErrInvalidRequest, req.Timeout)
	}
	return nil
}

// Exec runs a command in the session. In the foreground it streams the
// command's stdout and stderr to the writers (nil discards; they are
// called from the session's reader, so a slow writer delays the output of
// the session's other execs) and returns once it has ended and its output
// is written. In the background it returns once the command runs. A
// command that cannot be started ends as a shell says (127 or 126, the
// message on stderr), not as an error. Cancelling ctx kills a foreground
// command's whole tree and returns ctx.Err(). Errors: ErrInvalidRequest,
// or a *GoneError (ErrSessionGone) when the sandbox has ended.
func (s *Session) Exec(ctx context.Context, req ExecRequest, stdout, stderr io.Writer) (ExecResult, error) {
	if err := req.validate(); err != nil {
		return ExecResult{}, err
	}
	s.touch()
	defer s.touch()
	if !req.Background {
		s.running.Add(1)
		defer s.running.Add(-1)
	}
	c := newCall(stdout, stderr)
	c.bg = req.Background
	id, err := s.register(c)
	if err != nil {
		return ExecResult{}, err
	}
	env := make([]string, 0, len(req.Env))
	for k, v := range req.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	m := wire.Exec{Argv: req.Argv, Env: env, Cwd: req.Cwd, Stdin: req.Stdin, Background: req.Background, Timeout: req.Timeout}
	if err := s.send(wire.TypeExec, id, m.Marshal()); err != nil {
		s.unregister(id)
		return ExecResult{}, err
	}
	var pid int
	for {
		select {
		case p := <-c.started:
			if req.Background {
				// The call stays registered (Background counts it)
				// until its Exit, which finds no caller.
				c.abandon()
				return ExecResult{PID: int(p)}, nil
			}
			pid = int(p)
		case e := <-c.exit:
			return ExecResult{PID: pid, ExitCode: int(e.ExitCode), Signal: e.Signal, TimedOut: e.TimedOut, Wall: e.Wall}, nil
		case f := <-c.reply:
			return ExecResult{}, refusal(f)
		case err := <-c.err:
			return ExecResult{}, err
		case <-ctx.Done():
			c.abandon()
			s.unregister(id)
			_ = s.send(wire.TypeCancel, id, nil)
			return ExecResult{}, ctx.Err()
		}
	}
}

// request sends a request frame and waits for its reply.
func (s *Session) request(ctx context.Context, t wire.Type, payload []byte) (wire.Frame, error) {
	s.touch()
	defer s.touch()
	c := newCall(nil, nil)
	id, err := s.register(c)
	if err != nil {
		return wire.Frame{}, err
	}
	if err := s.send(t, id, payload); err != nil {
		s.unregister(id)
		return wire.Frame{}, err
	}
	select {
	case f := <-c.reply:
		return f, nil
	case err := <-c.err:
		return wire.Frame{}, err
	case <-ctx.Done():
		s.unregister(id)
		return wire.Frame{}, ctx.Err()
	}
}

// Ps lists the commands the session started that still run (foreground
// and background), by pid. Processes those commands started are not
// listed, though Kill reaches them.
func (s *Session) Ps(ctx context.Context) ([]Process, error) {
	f, err := s.request(ctx, wire.TypePs, nil)
	if err != nil {
		return nil, err
	}
	if f.Type != wire.TypePsReply {
		return nil, refusal(f)
	}
	var m wire.PsReply
	if err := m.Unmarshal(f.Payload); err != nil {
		return nil, fmt.Errorf("%w: ps reply: %v", ErrSessionGone, err)
	}
	out := make([]Process, 0, len(m.Processes))
	for _, p := range m.Processes {
		out = append(out, Process{PID: int(p.PID), Argv: p.Argv, Started: p.Started, Background: p.Background,
			Ended: p.Ended, ExitCode: int(p.ExitCode), Signal: syscall.Signal(p.Signal)})
	}
	return out, nil
}

// Kill sends sig to a process of the sandbox: for a command the session
// started (a pid Exec or Ps returned) to its whole process group, for any
// other descendant of the agent to that process. ErrNoProcess when pid is
// no live process of this sandbox.
func (s *Session) Kill(ctx context.Context, pid int, sig syscall.Signal) error {
	if sig < 1 || sig > 64 {
		return fmt.Errorf("%w: signal: %d is not between 1 and 64", ErrInvalidRequest, sig)
	}
	if pid <= 0 {
		return fmt.Errorf("%w: pid %d", ErrNoProcess, pid)
	}
	f, err := s.request(ctx, wire.TypeKill, wire.Kill{PID: int64(pid), Signal: int64(sig)}.Marshal())
	if err != nil {
		return err
	}
	return refusal(f)
}

// refusal maps a KillReply or Refused frame to its error (nil for OK).
func refusal(f wire.Frame) error {
	var r wire.Reply
	if err := r.Unmarshal(f.Payload); err != nil {
		return fmt.Errorf("%w: reply: %v", ErrSessionGone, err)
	}
	switch r.Code {
	case wire.CodeOK:
		if f.Type == wire.TypeRefused {
			return fmt.Errorf("%w: refused", ErrInvalidRequest)
		}
		return nil
	case wire.CodeNoProcess:
		return fmt.Errorf("%w: %s", ErrNoProcess, r.Message)
	case wire.CodeInvalid:
		return fmt.Errorf("%w: %s", ErrInvalidRequest, r.Message)
	default:
		return fmt.Errorf("session: agent: %s", r.Message)
	}
}
