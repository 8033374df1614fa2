package verify

import (
	"context"
	_ "embed" // built-in profiles
	"errors"
	"fmt"
	"os"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/worker"
)

//go:embed builtin_profiles.yaml
var builtinProfiles []byte

// BuiltinProfiles are the profiles a worker offers without a profile file.
func BuiltinProfiles() (*Profiles, error) { return ParseProfiles(builtinProfiles) }

// Service adapts a Checker and a profile set to the worker: it implements
// worker.Verifier.
type Service struct {
	checker  *Checker
	profiles *Profiles
	names    []string
}

var _ worker.Verifier = (*Service)(nil)

// NewService offers the profiles of ps whose checker is installed on this
// host; it returns the skipped ones with the reason, for the worker to log.
func NewService(c *Checker, ps *Profiles) (*Service, map[string]error) {
	s := &Service{checker: c, profiles: ps}
	skipped := map[string]error{}
	for i := range ps.Profiles {
		p := &ps.Profiles[i]
		if err := p.installed(); err != nil {
			skipped[p.Name] = err
			continue
		}
		s.names = append(s.names, p.Name)
	}
	return s, skipped
}

// Start pre-warms the warm REPL pools of the offered lean-repl profiles, so
// the first proofs do not pay for importing the header.
func (s *Service) Start(ctx context.Context, run worker.RunFunc) error {
	offered := &Profiles{}
	for _, n := range s.names {
		offered.Profiles = append(offered.Profiles, *s.profiles.Get(n))
	}
	return s.checker.Start(ctx, RunFunc(run), offered)
}

// Close stops the REPL pools.
func (s *Service) Close() error { return s.checker.Close() }

// Profiles lists the profiles this service can check.
func (s *Service) Profiles() []string { return s.names }

// Verify decides a verify task: a *messages.Error when the task itself is
// invalid (its statement does not elaborate), another error when the check
// could not be done here.
func (s *Service) Verify(ctx context.Context, run worker.RunFunc, t *messages.Task) (*worker.VerifyOutcome, error) {
	p := s.profiles.Get(t.EffectiveProfile())
	if p == nil {
		return nil, &messages.Error{Code: messages.CodeInvalidField, Field: "profile", Msg: fmt.Sprintf("this worker has no verify profile %q", t.EffectiveProfile())}
	}
	verdict, usage, err := s.checker.Check(ctx, RunFunc(run), p, t.Verify)
	var stmt *StatementError
	if errors.As(err, &stmt) {
		return nil, &messages.Error{Code: messages.CodeInvalidField, Field: "verify.statement", Msg: stmt.Error()}
	}
	if err != nil {
		return nil, err
	}
	return &worker.VerifyOutcome{Verdict: verdict, Wall: usage.Wall, CPU: usage.CPU, PeakMemory: usage.PeakMemory, InForce: usage.InForce}, nil
}

// installed checks that the profile's toolchain and binaries exist here.
func (p *Profile) installed() error {
	var paths []string
	switch p.Kind {
	case KindCoq:
		if p.Coq != nil {
			paths = append(paths, p.Coq.Coqc, p.Coq.Coqchk)
		}
	case KindLeanFile, KindLeanREPL:
		if p.Lean != nil {
			paths = append(paths, p.Lean.Project)
			if p.Kind == KindLeanFile {
				paths = append(paths, p.Lean.Checker) // the trusted audit step
			}
		}
	}
	paths = append(paths, p.Toolchain...)
	for _, path := range paths {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
	}
	return nil
}
