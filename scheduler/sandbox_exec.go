package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/messages"
)

// ExecOptions is one command to run in a session.
type ExecOptions struct {
	Argv  []string
	Env   map[string]string
	Cwd   string
	Stdin []byte
	// Background returns once the command started (its PID); its output
	// is discarded and Ps lists it until it exits.
	Background bool
	// Timeout kills the command after this long. Defaults to 0: none.
	Timeout time.Duration
}

// execAlive is how often a running exec checks that its host still
// answers: a host that crashed ends the exec with ErrSandboxGone.
const execAlive = 2 * time.Second

// outputGrace is how long Exec waits, after the exit, for output events
// still in flight.
const outputGrace = 2 * time.Second

// ErrOutputLost means output events of an exec went missing (core NATS does
// not store them); the exit status is still the command's.
var ErrOutputLost = errors.New("scheduler: sandbox exec output events were lost")

// Exec runs a command in the session, streaming its stdout and stderr to
// the writers as it runs, and returns how it ended. A command's own failure
// is its exit code, not an error; an error is a refusal (a *messages.Error:
// token, gone, invalid) or a lost host. Output lost on the way is reported
// as ErrOutputLost with the exit.
func (s *Sandbox) Exec(ctx context.Context, o ExecOptions, stdout, stderr io.Writer) (*messages.SandboxExit, error) {
	e := &messages.SandboxExec{Argv: o.Argv, Env: o.Env, Cwd: o.Cwd, Stdin: o.Stdin, Background: o.Background, TimeoutMS: o.Timeout.Milliseconds()}
	if o.Background {
		r, err := s.request(ctx, messages.SbxExec, &messages.SandboxRequest{Exec: e})
		if err != nil {
			return nil, err
		}
		return r.Exit, nil
	}
	out := &execOutput{stdout: stdout, stderr: stderr}
	out.cond = sync.NewCond(&out.mu)
	e.Reply = s.c.nc.NewInbox()
	sub, err := s.c.nc.Subscribe(e.Reply, out.receive)
	if err != nil {
		return nil, fmt.Errorf("scheduler: sandbox exec: subscribe: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	fctx, fcancel := context.WithTimeout(ctx, sandboxRequestTimeout)
	err = s.c.nc.FlushWithContext(fctx)
	fcancel()
	if err != nil {
		return nil, fmt.Errorf("scheduler: sandbox exec: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go s.watchHost(ctx, cancel)
	r, err := s.requestCtx(ctx, messages.SbxExec, &messages.SandboxRequest{Exec: e})
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return nil, cause
		}
		return nil, err
	}
	if r.Exit == nil {
		return nil, fmt.Errorf("scheduler: exec reply without an exit")
	}
	return r.Exit, out.wait(r.Exit.Events, outputGrace)
}

// watchHost ends ctx with the gone error when the host stops answering.
func (s *Sandbox) watchHost(ctx context.Context, cancel context.CancelCauseFunc) {
	t := time.NewTicker(execAlive)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, pcancel := context.WithTimeout(ctx, execAlive)
		_, err := s.requestCtx(pctx, messages.SbxStatus, &messages.SandboxRequest{})
		pcancel()
		if errors.Is(err, messages.ErrSandboxGone) {
			cancel(err)
			return
		}
	}
}

// execOutput writes an exec's events to its writers in sequence order.
type execOutput struct {
	stdout, stderr io.Writer
	mu             sync.Mutex
	cond           *sync.Cond
	seq            uint64 // highest seen
	gaps           uint64
	werr           error
}

func (o *execOutput) receive(m *nats.Msg) {
	ev, err := messages.DecodeSandboxEvent(m.Data)
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev.Seq <= o.seq {
		return // a duplicate
	}
	o.gaps += ev.Seq - o.seq - 1
	o.seq = ev.Seq
	w := o.stdout
	if ev.Type == messages.SbxEventStderr {
		w = o.stderr
	}
	if w != nil && o.werr == nil {
		_, o.werr = w.Write(ev.Data)
	}
	o.cond.Broadcast()
}

// wait waits up to grace for the events up to n, and reports a gap.
func (o *execOutput) wait(n uint64, grace time.Duration) error {
	t := time.AfterFunc(grace, func() { o.mu.Lock(); o.cond.Broadcast(); o.mu.Unlock() })
	defer t.Stop()
	deadline := time.Now().Add(grace)
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.seq < n && time.Now().Before(deadline) {
		o.cond.Wait()
	}
	if missing := o.gaps + n - min(o.seq, n); missing > 0 {
		return fmt.Errorf("%w: %d of %d events missing", ErrOutputLost, missing, n)
	}
	if o.werr != nil {
		return fmt.Errorf("scheduler: writing exec output: %w", o.werr)
	}
	return nil
}
