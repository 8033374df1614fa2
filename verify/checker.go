package verify

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/warrenhq/warren/messages"
)

// Config configures a Checker.
type Config struct {
	// ScratchRoot holds the per-check directories whose artifacts pass from
	// one step to the next (the compiled proof). Defaults to
	// $TMPDIR/warren-verify. It and its parents must be traversable (o+x)
	// by the sandbox's uids, which own a step's directory while it runs.
	ScratchRoot string
	// Logger receives diagnostics. Defaults to a disabled logger.
	Logger zerolog.Logger
}

// Checker decides verify tasks. It is safe for concurrent use; lean-repl
// profiles keep a warm pool per profile, started on first use or by Start.
type Checker struct {
	cfg Config
	log zerolog.Logger

	mu    sync.Mutex
	pools map[string]*ReplPool

	coq coqHosts // per Coq toolchain: the policy plugin and the stdlib view
}

// New returns a Checker.
func New(cfg Config) (*Checker, error) {
	cfg.ScratchRoot = cmp.Or(cfg.ScratchRoot, filepath.Join(os.TempDir(), "warren-verify"))
	if !filepath.IsAbs(cfg.ScratchRoot) {
		return nil, fmt.Errorf("verify config: ScratchRoot %q must be an absolute path", cfg.ScratchRoot)
	}
	if err := os.MkdirAll(cfg.ScratchRoot, 0o711); err != nil {
		return nil, fmt.Errorf("verify config: ScratchRoot: %w", err)
	}
	return &Checker{cfg: cfg, log: cfg.Logger.With().Str("component", "verify").Logger(), pools: map[string]*ReplPool{}}, nil
}

// Check decides one proof with the profile's checker. Every untrusted step
// runs through run. A verdict (accepted or rejected with a reason) means
// the check was decided; an error means it could not be done (sandbox
// unavailable, scratch unusable, cancelled), or, as a *StatementError, that
// the task itself is invalid.
func (c *Checker) Check(ctx context.Context, run RunFunc, p *Profile, spec *messages.VerifySpec) (*messages.Verdict, Usage, error) {
	switch p.Kind {
	case KindCoq:
		return c.checkCoq(ctx, run, p, spec)
	case KindLeanFile:
		return c.checkLeanFile(ctx, run, p, spec)
	case KindLeanREPL:
		pool, err := c.pool(ctx, run, p)
		if err != nil {
			return nil, Usage{}, err
		}
		return pool.Check(ctx, spec)
	}
	return nil, Usage{}, fmt.Errorf("%w: %q", ErrUnknownKind, p.Kind)
}

// Start pre-warms the REPL pools of the lean-repl profiles among ps.
func (c *Checker) Start(ctx context.Context, run RunFunc, ps *Profiles) error {
	for i := range ps.Profiles {
		if ps.Profiles[i].Kind != KindLeanREPL {
			continue
		}
		if _, err := c.pool(ctx, run, &ps.Profiles[i]); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every REPL pool and waits for its processes.
func (c *Checker) Close() error {
	c.mu.Lock()
	pools := c.pools
	c.pools = map[string]*ReplPool{}
	c.mu.Unlock()
	for _, p := range pools {
		p.Close()
	}
	return nil
}

func (c *Checker) pool(ctx context.Context, run RunFunc, p *Profile) (*ReplPool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pl, ok := c.pools[p.Name]; ok {
		return pl, nil
	}
	pl, err := NewReplPool(ctx, run, p, c.log)
	if err != nil {
		return nil, err
	}
	c.pools[p.Name] = pl
	return pl, nil
}

// scratch makes a fresh per-check directory and returns its remover.
func (c *Checker) scratch(prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp(c.cfg.ScratchRoot, prefix)
	if err != nil {
		return "", nil, &InfraError{Step: "create scratch", Err: err}
	}
	// The sandbox uid must traverse it to reach the step directory it is lent.
	if err := os.Chmod(dir, 0o711); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, &InfraError{Step: "create scratch", Err: err}
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
