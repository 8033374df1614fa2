package worker

import (
	"context"
	"io"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
)

// The session manager's seam: what it uses of one stateful sandbox. The
// types mirror package sandbox/session's (Spec, ExecRequest, ExecResult,
// Process) field for field, so an adapter of the real primitive is a
// conversion per method.

// SessionSpec is what a session starts from: the sandbox settings every
// command of the session shares (Argv unused) and its home on the host.
type SessionSpec struct {
	Sandbox sandbox.Spec
	Home    string
}

// SessionFactory starts a session; it owns the home and the uid it runs
// under until Close. PrimitiveSessions is the one every worker uses; the
// seam is for tests of the manager's own failure handling.
type SessionFactory func(ctx context.Context, r Runner, spec SessionSpec) (SessionSandbox, error)

// SessionExec is one command to run in a session.
type SessionExec struct {
	Argv       []string
	Env        map[string]string
	Cwd        string
	Stdin      []byte
	Background bool
	Timeout    time.Duration
}

// SessionExit is how a command ended (Background: that it started).
type SessionExit struct {
	PID      int
	ExitCode int
	Signal   string
	TimedOut bool
	Wall     time.Duration
}

// SessionProcess is a command running in a session, or a background one
// that ended (Ended set; ExitCode, or -1 and the Signal that killed it).
type SessionProcess struct {
	PID        int
	Argv       []string
	Started    time.Time
	Background bool
	Ended      time.Time
	ExitCode   int
	Signal     syscall.Signal
}

// SessionFiles is the session home's files API (*files.Home).
type SessionFiles interface {
	Read(ctx context.Context, p string, offset, length int64) ([]byte, error)
	Write(ctx context.Context, p string, data []byte, opts files.WriteOptions) (int64, error)
	Stat(ctx context.Context, p string) (files.Entry, error)
	List(ctx context.Context, p string) ([]files.Entry, error)
	Mkdir(ctx context.Context, p string) error
	Delete(ctx context.Context, p string, recursive bool) error
}

// SessionSandbox is one running session.
type SessionSandbox interface {
	Exec(ctx context.Context, req SessionExec, stdout, stderr io.Writer) (SessionExit, error)
	Ps(ctx context.Context) ([]SessionProcess, error)
	Kill(ctx context.Context, pid int, sig syscall.Signal) error
	Files() SessionFiles
	// Running counts its commands in flight, foreground and background:
	// idle eviction never ends a session while it is above 0 (a
	// background server keeps it; the TTL bounds it).
	Running() int
	LastActivity() time.Time
	// Close kills everything, tears down the uid and home; idempotent.
	Close(ctx context.Context) error
	// Done is closed when the session ended (Close, or the sandbox died);
	// Err says why.
	Done() <-chan struct{}
	Err() error
}
