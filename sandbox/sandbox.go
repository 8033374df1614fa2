package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"github.com/warrenhq/warren/sandbox/internal/home"
	"github.com/warrenhq/warren/sandbox/internal/ident"
)

// Config configures a Runner. The zero value plus defaults is a runner in
// auto mode that refuses to run anything when no isolation is available.
type Config struct {
	// Isolation is the mode used when a Spec does not ask for one. Defaults
	// to auto.
	Isolation Isolation
	// AllowInsecure permits isolation none. It exists so that running
	// untrusted code without a sandbox is always a deliberate, visible
	// choice. Defaults to false.
	AllowInsecure bool
	// ScratchRoot holds one scratch directory per run; created (0711) when
	// missing. Defaults to $TMPDIR/warren-sandboxes-<euid>, private to the
	// worker's user, so root and ordinary users share no directory: made
	// 0700 (0711 as root, whose sandbox uids must reach their own
	// directory in it) and refused (ErrScratchRootNotPrivate) when it
	// exists owned by another user, as a symlink or writable by others.
	ScratchRoot string
	// Defaults fills zero fields of every Spec's Limits. Defaults to
	// DefaultLimits.
	Defaults Limits
	// Logger receives setup diagnostics. Defaults to a disabled logger.
	Logger zerolog.Logger
	// UIDBase is the first uid (and gid) of the range a root worker gives
	// its sandboxes, one dedicated id per concurrent run; the whole range
	// must be mapped in the worker's user namespace (/proc/self/uid_map and
	// gid_map), else New fails naming the map. Unused when the worker is
	// not root (its own uid is mapped 1:1 instead). Defaults to an
	// automatic choice: DefaultUIDBase (above the ranges systemd and
	// /etc/subuid use) where that range is mapped, as on any host outside
	// a container; inside a user namespace that maps fewer ids (a
	// container mapping 0..65535) the top of the mapped ids, skipping ids
	// below 1000, 65534/65535 and ids named in /etc/passwd or /etc/group
	// (ident.ChooseRange has the rule).
	UIDBase uint32
	// UIDCount is the size of that range; it bounds the number of
	// concurrent runs of a root worker. Defaults to DefaultUIDCount (the
	// automatic choice takes fewer when no mapped run of free ids is that
	// long).
	UIDCount uint32
	// Prestart is how many warm sandboxes a Runner keeps ready per view
	// (up to 4 views: mode, read-only paths, network, /tmp size). A warm
	// namespace-mode sandbox has its namespaces, cgroup, scratch directory
	// and whole mount tree built; a warm Landlock-mode one its uid, home,
	// cgroup and init; both wait for a task, which takes most of the start
	// cost off a run's critical path. In namespace mode with the Landlock
	// layer and bounded homes (Defaults.Disk) each is a template, reused
	// task after task with fresh pid, IPC and mount namespaces (doc.go,
	// "Templates"); otherwise each serves one run and is replaced in the
	// background; each idle one holds a sandbox uid, a scratch directory
	// and a few MB (and, with Defaults.Disk, a home tmpfs of that size).
	// Runs whose stdio are *os.File, with Spec.Scratch, or with a disk
	// limit a warm home cannot take (disk_quota.go warmServes), start cold. Start starts them, Close releases them. Defaults to 0 (every run
	// starts cold).
	Prestart int
	// InitPath is the sandbox init binary (cmd/warren-sandbox-init, a small
	// program that starts in a few ms). Defaults to warren-sandbox-init
	// next to the running executable when there is one, else this binary
	// itself re-executed (/proc/self/exe), which must then call MaybeInit
	// first thing in main. It is opened once and executed through that
	// descriptor, so sandbox uids need no access to its directory.
	InitPath string
	// LandlockMinABI is the lowest Landlock ABI the landlock and layered
	// modes accept; below it they refuse with ErrUnavailable rather than
	// apply less. Lowering it is an explicit choice to run without what the
	// missing ABIs add (6: abstract-socket and signal scopes; 5: device
	// ioctl; 4: TCP rules). Defaults to 6.
	LandlockMinABI int
}

// Default sandbox uid range of a root worker.
const (
	DefaultUIDBase  = ident.DefaultBase
	DefaultUIDCount = ident.DefaultCount
)

// DefaultLimits apply where neither the spec nor Config.Defaults set a limit.
var DefaultLimits = Limits{
	Wall:      5 * time.Minute,
	CPU:       5 * time.Minute,
	Memory:    2 << 30,
	Processes: 256,
	FileSize:  256 << 20,
	OpenFiles: 1024,
	TmpSize:   64 << 20,
}

// DefaultDisk is the disk limit the worker and `warren sandbox run` give
// a run's home when none is asked for: 1 GiB, four times the default
// per-file limit (a build tree with a few large artefacts) and half the
// default memory limit, which the home's tmpfs pages count against too.
// The package's own default (DefaultLimits) is no quota: a Runner bounds
// homes when Config.Defaults.Disk or Spec.Limits.Disk asks it to.
const DefaultDisk = 1 << 30

func (c Config) withDefaults() Config {
	c.Isolation = cmp.Or(c.Isolation, IsolationAuto)
	c.ScratchRoot = cmp.Or(c.ScratchRoot, home.DefaultRoot())
	c.Defaults = c.Defaults.withDefaults(DefaultLimits)
	c.LandlockMinABI = cmp.Or(c.LandlockMinABI, landlockMinABIDefault)
	c.InitPath = cmp.Or(c.InitPath, defaultInitPath())
	return c
}

func (c Config) validate() error {
	switch c.Isolation {
	case IsolationAuto, IsolationNamespace, IsolationLandlock, IsolationNone:
	default:
		return fmt.Errorf("sandbox config: Isolation %q is not auto, namespace, landlock or none", c.Isolation)
	}
	if c.Isolation == IsolationNone && !c.AllowInsecure {
		return fmt.Errorf("sandbox config: Isolation none needs AllowInsecure: %w", ErrInsecureRefused)
	}
	if uint64(c.UIDBase)+uint64(c.UIDCount) > 1<<32-2 {
		return fmt.Errorf("sandbox config: UIDBase %d with UIDCount %d must stay within 1..4294967294", c.UIDBase, c.UIDCount)
	}
	if c.LandlockMinABI < 1 || c.LandlockMinABI >= len(landlockABIFeatures) {
		return fmt.Errorf("sandbox config: LandlockMinABI %d must be between 1 and %d", c.LandlockMinABI, len(landlockABIFeatures)-1)
	}
	if c.Prestart < 0 || c.Prestart > 64 {
		return fmt.Errorf("sandbox config: Prestart %d must be within 0..64", c.Prestart)
	}
	if !filepath.IsAbs(c.InitPath) {
		return fmt.Errorf("sandbox config: InitPath %q must be an absolute path", c.InitPath)
	}
	if !filepath.IsAbs(c.ScratchRoot) {
		return fmt.Errorf("sandbox config: ScratchRoot %q must be an absolute path", c.ScratchRoot)
	}
	return nil
}

// resolveUIDRange sets UIDBase and UIDCount to the range a root worker
// uses (ident.WorkerRange); for an ordinary worker, which has no range, to
// the defaults.
func (c *Config) resolveUIDRange() error {
	if os.Geteuid() != 0 {
		c.UIDBase = cmp.Or(c.UIDBase, DefaultUIDBase)
		c.UIDCount = cmp.Or(c.UIDCount, DefaultUIDCount)
		return nil
	}
	r, err := ident.WorkerRange(c.UIDBase, c.UIDCount)
	if err != nil {
		return fmt.Errorf("sandbox config: UIDBase/UIDCount: %w", err)
	}
	c.UIDBase, c.UIDCount = r.Base, r.Count
	return nil
}

func (l Limits) withDefaults(d Limits) Limits {
	l.Wall = cmp.Or(l.Wall, d.Wall)
	l.CPU = cmp.Or(l.CPU, d.CPU)
	l.Memory = cmp.Or(l.Memory, d.Memory)
	l.Processes = cmp.Or(l.Processes, d.Processes)
	l.FileSize = cmp.Or(l.FileSize, d.FileSize)
	l.OpenFiles = cmp.Or(l.OpenFiles, d.OpenFiles)
	l.TmpSize = cmp.Or(l.TmpSize, d.TmpSize)
	l.Disk = cmp.Or(l.Disk, d.Disk)
	return l
}

// resolveLimits fills what asked leaves zero from defaults, with two
// limits following the ones set: a CPU limit not asked for is at least
// the wall limit (a run given 6 minutes is not cut at the default 5 of
// CPU), and a file-size limit not asked for is the disk limit when the
// home has one (a file as large as the disk allows ends in ENOSPC, not
// SIGXFSZ at the default 256 MiB).
func resolveLimits(asked, defaults Limits) Limits {
	l := asked.withDefaults(defaults)
	if asked.CPU == 0 {
		l.CPU = max(l.CPU, l.Wall)
	}
	if asked.FileSize == 0 && l.Disk > 0 {
		l.FileSize = l.Disk
	}
	return l
}

// Runner runs commands in sandboxes. It is safe for concurrent use; each
// Run is independent.
type Runner struct {
	cfg  Config
	init initBinary // the sandbox init (init_binary.go)
	log  zerolog.Logger
	// defaultRoot: cfg.ScratchRoot is the per-user default (home.DefaultRoot).
	defaultRoot bool

	// What the isolated modes share, detected once (setupHost).
	hostOnce sync.Once
	cgroups  cgroup.Support
	pool     *ident.Pool // nil when the worker is not root
	// noLayer leaves the namespace mode's Landlock layer off, so tests
	// prove the namespace layer's own properties (the layer is proven by
	// its own tests).
	noLayer atomic.Bool

	life lifecycle // Start and Close (lifecycle.go)
	warm *warmPool // warm sandboxes (warm_pool.go)
}

// New checks the configuration and returns a Runner. It starts nothing
// and does not probe the kernel: Start sweeps what dead workers left and
// starts the warm pool; a mode that turns out to be unavailable fails its
// first Run with ErrUnavailable (fail closed), and `warren doctor` probes
// up front.
func New(cfg Config) (*Runner, error) {
	explicitRoot := cfg.ScratchRoot != ""
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.resolveUIDRange(); err != nil {
		return nil, err
	}
	if err := makeScratchRoot(cfg.ScratchRoot, explicitRoot); err != nil {
		return nil, err
	}
	init, err := openInit(cfg.InitPath)
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, init: init, log: cfg.Logger.With().Str("component", "sandbox").Logger(), defaultRoot: !explicitRoot}
	build := func(k warmKey, hook func(*nsConfig)) (*warmSandbox, error) { return newWarm(r, k, hook) }
	r.warm = newWarmPool(build, r.warmServes, r.log)
	return r, nil
}

// Run runs spec.Argv in a sandbox and waits for the whole process tree to
// end. Cancelling ctx kills the tree. An error means the command did not run
// (or its end could not be observed); a non-zero exit is not an error. A
// Run before Start (or after Close) starts cold.
func (r *Runner) Run(ctx context.Context, spec Spec) (*Result, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, fmt.Errorf("%w: empty argv", ErrInvalidSpec)
	}
	spec.Limits = resolveLimits(spec.Limits, r.cfg.Defaults)
	res, err := r.runMode(ctx, spec, cmp.Or(spec.Isolation, r.cfg.Isolation))
	if err == nil && res.ExecError != nil && spec.Stderr != nil {
		// As a shell says it; the run's own output is drained by now.
		_, _ = fmt.Fprintf(spec.Stderr, "warren: %v\n", res.ExecError)
	}
	return res, err
}

// runMode runs spec in the mode iso names (none, auto or an isolated one).
func (r *Runner) runMode(ctx context.Context, spec Spec, iso Isolation) (*Result, error) {
	switch iso {
	case IsolationNone:
		if !r.cfg.AllowInsecure {
			return nil, ErrInsecureRefused
		}
		return r.runInsecure(ctx, spec)
	case IsolationAuto:
		return r.runAuto(ctx, spec)
	}
	if m, ok := isolatedModes[iso]; ok {
		return r.runIsolated(ctx, m, spec)
	}
	return nil, fmt.Errorf("%w: isolation %q", ErrInvalidSpec, iso)
}
