package session

import (
	"errors"
	"fmt"
)

var (
	// ErrSessionGone means the session's sandbox has ended (GoneError says
	// why); nothing more can run in it. Create a new session.
	ErrSessionGone = errors.New("session: the sandbox is gone")
	// ErrInvalidRequest means a request cannot be served as given (empty
	// argv, stdin over the limit, a bad signal); the message names the
	// field.
	ErrInvalidRequest = errors.New("session: invalid request")
	// ErrNoProcess means the pid is not a live process of this session's
	// sandbox (Kill signals only the agent's descendants).
	ErrNoProcess = errors.New("session: no such process in this sandbox")
	// ErrAgent means the agent binary is missing or unusable, or it spoke
	// another protocol version: install warren-sandbox-agent next to the
	// worker (`make build`) or set Spec.AgentPath.
	ErrAgent = errors.New("session: sandbox agent unusable")
)

// GoneReason says why a session's sandbox ended.
type GoneReason string

// Gone reasons.
const (
	// GoneClosed: Close ended it.
	GoneClosed GoneReason = "closed"
	// GoneTTL: its wall limit (Spec.Sandbox.Limits.Wall) passed.
	GoneTTL GoneReason = "ttl"
	// GoneCPU: the agent used up its CPU limit (Limits.CPU).
	GoneCPU GoneReason = "cpu"
	// GoneOOM: the OOM killer killed the agent for the sandbox's memory
	// limit.
	GoneOOM GoneReason = "oom"
	// GoneAgentExited: the agent exited or was killed (e.g. by a command
	// of the session killing every process of its uid).
	GoneAgentExited GoneReason = "agent-exited"
	// GoneProtocol: the agent's stream broke the protocol (the session
	// was ended for it).
	GoneProtocol GoneReason = "protocol"
	// GoneRunner: the runner failed to observe the sandbox's end (its
	// error is wrapped).
	GoneRunner GoneReason = "runner"
)

// GoneError is why a session ended. It matches ErrSessionGone with
// errors.Is and wraps the runner's error, if any.
type GoneError struct {
	Reason GoneReason
	// Detail is a human-readable account (exit status, signal, the
	// agent's last stderr line).
	Detail string
	// ExitCode and Signal are the agent's, when it ended on its own.
	ExitCode int
	Signal   string
	Err      error
}

func (e *GoneError) Error() string {
	msg := fmt.Sprintf("session: the sandbox is gone (%s)", e.Reason)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes every GoneError match ErrSessionGone.
func (e *GoneError) Is(target error) bool { return target == ErrSessionGone }

func (e *GoneError) Unwrap() error { return e.Err }
