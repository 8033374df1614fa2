package worker

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox/session"
)

// PrimitiveSessions is the SessionFactory of every worker, package
// sandbox/session: a session is one run of the agent in a sandbox of the
// worker's runner, as confined as a task of that runner (under a runner
// of isolation none, not at all: the agent and its commands run as plain
// host processes of the worker's user), its agent at agentPath ("" = next
// to the executable). The home is the run's scratch directory (spec.Home
// unused), so a warm sandbox serves it and the runner's teardown removes
// it with the uid, as a task's.
func PrimitiveSessions(agentPath string) SessionFactory {
	return func(ctx context.Context, r Runner, spec SessionSpec) (SessionSandbox, error) {
		s, err := session.Start(ctx, r, session.Spec{Sandbox: spec.Sandbox, AgentPath: agentPath})
		if err != nil {
			return nil, err
		}
		return primitive{s}, nil
	}
}

type primitive struct{ *session.Session }

// Running counts the foreground execs and the live background commands:
// a background server keeps its session from idling out (its TTL bounds
// it).
func (p primitive) Running() int { return p.Session.Running() + p.Session.Background() }

// primitiveErr gives the primitive's refusals their wire codes.
func primitiveErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrNoProcess):
		return syscall.ESRCH
	case errors.Is(err, session.ErrSessionGone):
		return &messages.Error{Code: messages.CodeSandboxGone, Msg: err.Error()}
	case errors.Is(err, session.ErrInvalidRequest):
		return &messages.Error{Code: messages.CodeInvalidField, Msg: err.Error()}
	}
	return err
}

func (p primitive) Exec(ctx context.Context, req SessionExec, stdout, stderr io.Writer) (SessionExit, error) {
	res, err := p.Session.Exec(ctx, session.ExecRequest(req), stdout, stderr)
	return SessionExit(res), primitiveErr(err)
}

func (p primitive) Ps(ctx context.Context) ([]SessionProcess, error) {
	ps, err := p.Session.Ps(ctx)
	out := make([]SessionProcess, len(ps))
	for i, x := range ps {
		out[i] = SessionProcess(x)
	}
	return out, primitiveErr(err)
}

func (p primitive) Kill(ctx context.Context, pid int, sig syscall.Signal) error {
	return primitiveErr(p.Session.Kill(ctx, pid, sig))
}

// Files are the session's own file methods, which count as activity.
func (p primitive) Files() SessionFiles { return p.Session }
