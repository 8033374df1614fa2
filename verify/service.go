package verify

import (
	"context"
	_ "embed" // built-in profiles
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/warrenhq/warren/messages"
)

//go:embed builtin_profiles.yaml
var builtinProfiles []byte

// BuiltinProfiles are the profiles a worker offers without a profile file.
func BuiltinProfiles() (*Profiles, error) { return ParseProfiles(builtinProfiles) }

// Service decides verify tasks with a Checker and a profile set. It is the
// worker's Verifier: the worker's contract is written in this package's
// types (RunFunc, Outcome), so the worker imports verify and verify never
// imports the worker. With a VerdictCache it answers a proof it (or another
// host) has decided before from the cache.
type Service struct {
	checker  *Checker
	profiles *Profiles
	names    []string
	cache    VerdictCache      // nil: no cache
	prints   map[string]string // profile name -> toolchain fingerprint
	check    func(context.Context, RunFunc, *Profile, *messages.VerifySpec) (*messages.Verdict, Usage, error)
	now      func() time.Time

	mu       sync.Mutex
	inflight map[string]*flight // cache key -> the check deciding it on this host
}

// flight is one check in progress that identical proofs wait for.
type flight struct {
	done   chan struct{}
	cached *CachedVerdict // set before done closes when the verdict is cacheable
}

// Outcome is a decided verify task and what deciding it cost (zero for a
// cached verdict: nothing ran).
type Outcome struct {
	Verdict    *messages.Verdict
	Wall, CPU  time.Duration
	PeakMemory int64
	InForce    string // isolation of the sandboxed steps; empty when none ran
}

// coqHostTimeout bounds preparing a Coq toolchain (building the policy
// plugin, linking the stdlib view) when a Service is made.
const coqHostTimeout = 2 * time.Minute

// NewService offers the profiles of ps whose checker is installed on this
// host (for Coq: whose policy plugin builds); it returns the skipped ones
// with the reason, for the worker to log.
// cache may be nil (every proof is checked).
func NewService(c *Checker, ps *Profiles, cache VerdictCache) (*Service, map[string]error) {
	s := &Service{checker: c, profiles: ps, cache: cache, prints: map[string]string{},
		check: c.Check, now: time.Now, inflight: map[string]*flight{}}
	skipped := map[string]error{}
	for i := range ps.Profiles {
		p := &ps.Profiles[i]
		if err := p.installed(); err != nil {
			skipped[p.Name] = err
			continue
		}
		if p.Kind == KindCoq {
			// The policy plugin and the stdlib view: a host that cannot
			// build them cannot check Coq proofs (fail closed, said now).
			ctx, cancel := context.WithTimeout(context.Background(), coqHostTimeout)
			_, err := c.coqHost(ctx, p)
			cancel()
			if err != nil {
				skipped[p.Name] = fmt.Errorf("profile %s: %w", p.Name, err)
				continue
			}
		}
		fp, err := p.Fingerprint()
		if err != nil {
			skipped[p.Name] = err
			continue
		}
		s.prints[p.Name] = fp
		s.names = append(s.names, p.Name)
	}
	return s, skipped
}

// Start pre-warms the warm REPL pools of the offered lean-repl profiles, so
// the first proofs do not pay for importing the header.
func (s *Service) Start(ctx context.Context, run RunFunc) error {
	offered := &Profiles{}
	for _, n := range s.names {
		offered.Profiles = append(offered.Profiles, *s.profiles.Get(n))
	}
	return s.checker.Start(ctx, run, offered)
}

// Close stops the REPL pools.
func (s *Service) Close() error { return s.checker.Close() }

// Profiles lists the profiles this service can check.
func (s *Service) Profiles() []string { return s.names }

// Verify decides a verify task: a *messages.Error when the task itself is
// invalid (its statement does not elaborate), another error when the check
// could not be done here.
func (s *Service) Verify(ctx context.Context, run RunFunc, t *messages.Task) (*Outcome, error) {
	p := s.profiles.Get(t.EffectiveProfile())
	fp, offered := s.prints[t.EffectiveProfile()]
	if p == nil || !offered {
		return nil, &messages.Error{Code: messages.CodeInvalidField, Field: "profile", Msg: fmt.Sprintf("this worker has no verify profile %q", t.EffectiveProfile())}
	}
	if s.cache == nil {
		out, _, err := s.decide(ctx, run, p, fp, t.Verify, "")
		return out, err
	}
	key := CacheKey(fp, messages.BatchTenant(t.Batch), t.Verify)
	for {
		if !t.Verify.NoCache {
			cv, err := s.cache.Get(ctx, key)
			if err != nil {
				s.checker.log.Warn().Err(err).Str("key", key).Msg("verdict cache unreadable: checking the proof")
			}
			if cv != nil && cv.Verdict.Toolchain == fp {
				return cachedOutcome(cv), nil
			}
		}
		f, leader := s.join(key)
		if leader && !t.Verify.NoCache {
			// A flight that ended between the Get above and join stored its
			// verdict before it left: look again before checking.
			if cv, _ := s.cache.Get(ctx, key); cv != nil && cv.Verdict.Toolchain == fp {
				s.leave(key, f, cv)
				return cachedOutcome(cv), nil
			}
		}
		if leader {
			var cv *CachedVerdict
			defer func() { s.leave(key, f, cv) }() // even if the check panics, waiters go on
			out, cv, err := s.decide(ctx, run, p, fp, t.Verify, key)
			return out, err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.cached != nil && !t.Verify.NoCache {
			return cachedOutcome(f.cached), nil
		}
		// Not cacheable (a timeout, an error) or a fresh check was asked
		// for: check it here.
	}
}

// join returns the flight deciding key, and whether the caller is its
// leader (it must then decide and leave).
func (s *Service) join(key string) (*flight, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.inflight[key]; ok {
		return f, false
	}
	f := &flight{done: make(chan struct{})}
	s.inflight[key] = f
	return f, true
}

// leave ends a flight; cv (nil when the outcome is not cacheable) is what
// the waiters are answered with.
func (s *Service) leave(key string, f *flight, cv *CachedVerdict) {
	f.cached = cv
	s.mu.Lock()
	delete(s.inflight, key)
	s.mu.Unlock()
	close(f.done)
}

// cachedOutcome is a stored verdict served again: no step ran.
func cachedOutcome(cv *CachedVerdict) *Outcome {
	v := *cv.Verdict
	v.Cached, v.FirstDecidedAt = true, cv.DecidedAt
	return &Outcome{Verdict: &v}
}

// decide checks the proof and stamps the verdict with the toolchain. When
// key is set and the verdict cacheable it stores it, and returns the entry.
func (s *Service) decide(ctx context.Context, run RunFunc, p *Profile, fp string, spec *messages.VerifySpec, key string) (*Outcome, *CachedVerdict, error) {
	verdict, usage, err := s.check(ctx, run, p, spec)
	var stmt *StatementError
	if errors.As(err, &stmt) {
		return nil, nil, &messages.Error{Code: messages.CodeInvalidField, Field: "verify.statement", Msg: stmt.Error()}
	}
	if err != nil {
		return nil, nil, err
	}
	verdict.Toolchain = fp
	out := &Outcome{Verdict: verdict, Wall: usage.Wall, CPU: usage.CPU, PeakMemory: usage.PeakMemory, InForce: usage.InForce}
	if key == "" || !cacheable(verdict) {
		return out, nil, nil
	}
	cv := &CachedVerdict{Verdict: verdict, DecidedAt: s.now().UTC()}
	if err := s.cache.Put(ctx, key, cv); err != nil {
		s.checker.log.Warn().Err(err).Str("key", key).Msg("verdict not stored in the cache")
	}
	return out, cv, nil
}

// installed checks that the profile's toolchain and binaries exist here.
func (p *Profile) installed() error {
	var paths []string
	switch p.Kind {
	case KindCoq:
		if p.Coq != nil {
			// /bin/sh runs steps 2 and 3 in one sandbox (trustedSteps).
			paths = append(paths, p.Coq.Coqc, p.Coq.Coqchk, p.Coq.Ocamlfind, "/bin/sh")
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
