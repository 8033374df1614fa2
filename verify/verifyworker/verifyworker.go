// Package verifyworker plugs a verify.Service into a worker: it implements
// worker.Verifier, so that package verify (the checkers) never imports the
// worker. It holds no logic beyond converting types.
package verifyworker

import (
	"context"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/verify"
	"github.com/warrenhq/warren/worker"
)

// Verifier adapts a *verify.Service to worker.Verifier (with the optional
// Start and Close the worker calls).
type Verifier struct {
	svc *verify.Service
}

var _ worker.Verifier = (*Verifier)(nil)

// New wraps svc.
func New(svc *verify.Service) *Verifier { return &Verifier{svc: svc} }

// Verify decides t.
func (v *Verifier) Verify(ctx context.Context, run worker.RunFunc, t *messages.Task) (*worker.VerifyOutcome, error) {
	out, err := v.svc.Verify(ctx, verify.RunFunc(run), t)
	if err != nil {
		return nil, err
	}
	return &worker.VerifyOutcome{Verdict: out.Verdict, Wall: out.Wall, CPU: out.CPU, PeakMemory: out.PeakMemory, InForce: out.InForce}, nil
}

// Profiles lists the profiles the service checks.
func (v *Verifier) Profiles() []string { return v.svc.Profiles() }

// Start pre-warms the service's REPL pools.
func (v *Verifier) Start(ctx context.Context, run worker.RunFunc) error {
	return v.svc.Start(ctx, verify.RunFunc(run))
}

// Close stops them.
func (v *Verifier) Close() error { return v.svc.Close() }
