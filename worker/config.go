package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/verify"
)

// Runner runs one command in a sandbox; *sandbox.Runner is the real one.
type Runner interface {
	Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error)
}

// Verifier decides verify tasks. It runs each untrusted step through run and
// returns a verdict, or an error when the check could not be carried out: a
// *messages.Error when the task itself is invalid (never retried), anything
// else an infrastructure failure (retried elsewhere). *verify.Service is the
// real one. The contract's types (verify.RunFunc, verify.Outcome) belong to
// the checkers: the worker imports verify, never the reverse. Whoever builds
// the Verifier starts and closes it (the worker only calls Verify).
type Verifier interface {
	Verify(ctx context.Context, run verify.RunFunc, t *messages.Task) (*verify.Outcome, error)
	// Profiles lists the verify profiles this verifier can check.
	Profiles() []string
}

// Config configures a Worker.
type Config struct {
	// HostID names this worker in results and the host registry. Defaults to
	// the hostname plus the process id.
	HostID string
	// Pool is the worker pool to serve. Defaults to "default".
	Pool string
	// Capacity is the number of sandbox slots: the most tasks this worker
	// holds at once. Defaults to the number of CPUs.
	Capacity int
	// ExecProfiles are the exec profiles served. Defaults to ["default"].
	ExecProfiles []string
	// UnixSocketProfiles are the exec profiles (a subset of ExecProfiles)
	// whose tasks and sandbox sessions may create AF_UNIX sockets
	// (sandbox.Spec.UnixSockets), for programs that serve a unix socket in
	// their own home. An operator's choice, never a task's: the seccomp
	// filter refuses socket(AF_UNIX) everywhere else. Only safe where the
	// sandbox has a mount namespace (namespace or layered isolation): the
	// composition root refuses it over Landlock-only isolation, where the
	// host's pathname sockets would be reachable again. Defaults to none.
	UnixSocketProfiles []string
	// Runner runs sandboxes. Required.
	Runner Runner
	// Isolation lists the modes Runner offers, for the host registry.
	// Defaults to ["auto"].
	Isolation []messages.Isolation
	// Verifier checks verify tasks; nil serves no verify profile.
	Verifier Verifier
	// Consumer tunes the shared durable consumers (AckWait, MaxDeliver).
	Consumer broker.ConsumerConfig
	// PullWait is how long one pull for a free slot waits for a task before
	// the slot is offered again (one profile served). With several
	// profiles a pull never waits while it holds a slot on a busy worker,
	// and PullWait is the longest pause between two polls of a profile
	// that had no task; once every profile's last pull found nothing, each
	// profile's pull waits up to min(PullWait, 1s) holding a free slot
	// (see pullLoop).
	// Defaults to 2s.
	PullWait time.Duration
	// Heartbeat is how often a running task is marked in progress (and a
	// keepalive event sent). Defaults to a third of Consumer.AckWait.
	Heartbeat time.Duration
	// RetryBase is the first redelivery delay after an infrastructure
	// failure; it doubles per delivery up to RetryMax. Defaults to 1s / 30s.
	RetryBase, RetryMax time.Duration
	// DiskBytes is the disk limit of a task's home when the task sets no
	// limits.disk_bytes, and the most a task may ask for: a task asking
	// for more is invalid here. Every home is a tmpfs, held in memory: New
	// refuses a Capacity × DiskBytes above the host's memory and swap
	// (disk_admission.go). Negative: homes are unbounded (on the host's
	// disk). Defaults to sandbox.DefaultDisk (1 GiB).
	DiskBytes int64
	// Ceilings are the largest limits a task may ask for on this host,
	// published in the host registry (HostInfo.Ceilings): a task above one
	// is answered invalid (messages.CodeOverCeiling), never run. Zero
	// fields take the defaults: wall and CPU time 24 h, memory half the
	// host's RAM (at least 2 GiB), processes 4096, open files 65536,
	// output 64 MiB a stream, disk DiskBytes; file size is bounded by the
	// disk limit alone.
	Ceilings messages.Limits
	// DefaultOutputBytes caps captured stdout and stderr each when a task
	// sets no limit. Defaults to 1 MiB.
	DefaultOutputBytes int64
	// RegistryInterval is how often the host registry entry is refreshed.
	// Defaults to 10s.
	RegistryInterval time.Duration
	// InboxPrefixes are the subject prefixes a task's reply may use besides
	// its own batch's events (messages.CheckReply). They come from the
	// operator, never from a task. Defaults to messages.DefaultInboxPrefixes.
	InboxPrefixes []string
	// SealKey is the pool's curve key pair (with its seed) that opens
	// tasks' sealed secrets; its public key is published in the host
	// registry. Defaults to nil: a task with secrets gets an infra_error
	// result with code secrets_unavailable.
	SealKey nkeys.KeyPair
	// Version is reported in the host registry.
	Version string
	// Logger is the worker's logger. Defaults to a disabled logger.
	Logger zerolog.Logger
	// Metrics, when set, is where the worker registers its Prometheus
	// collectors (warren_worker_*: slots, tasks by status, durations, queue
	// wait, setup failures, verdicts, redeliveries, dead letters, pull
	// errors). Defaults to nil: no metrics.
	Metrics prometheus.Registerer
}

// Option sets what a Worker does besides its Config: a signal for tests,
// never an operator's setting.
type Option func(*Worker)

// OnTaskStarted has the worker send the id of each task as it starts to
// ch (a send waits at most a second): a test's signal that a task runs.
func OnTaskStarted(ch chan<- string) Option {
	return func(w *Worker) { w.taskStarted = ch }
}

func (c Config) withDefaults() Config {
	if c.HostID == "" {
		h, _ := os.Hostname()
		c.HostID = fmt.Sprintf("%s-%d", cmp.Or(h, "host"), os.Getpid())
	}
	c.Pool = cmp.Or(c.Pool, messages.DefaultPool)
	c.Capacity = cmp.Or(c.Capacity, runtime.NumCPU())
	if len(c.ExecProfiles) == 0 {
		c.ExecProfiles = []string{messages.DefaultProfile}
	}
	if len(c.Isolation) == 0 {
		c.Isolation = []messages.Isolation{messages.IsolationAuto}
	}
	c.Consumer = c.Consumer.WithDefaults()
	c.PullWait = cmp.Or(c.PullWait, 2*time.Second)
	c.Heartbeat = cmp.Or(c.Heartbeat, c.Consumer.AckWait/3)
	c.RetryBase = cmp.Or(c.RetryBase, time.Second)
	c.RetryMax = cmp.Or(c.RetryMax, 30*time.Second)
	c.DefaultOutputBytes = cmp.Or(c.DefaultOutputBytes, 1<<20)
	c.DiskBytes = cmp.Or(c.DiskBytes, sandbox.DefaultDisk)
	c.Ceilings = withDefaultCeilings(c.Ceilings, c.DiskBytes)
	c.RegistryInterval = cmp.Or(c.RegistryInterval, 10*time.Second)
	c.Version = cmp.Or(c.Version, "dev")
	if len(c.InboxPrefixes) == 0 {
		c.InboxPrefixes = messages.DefaultInboxPrefixes
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Runner == nil:
		return errors.New("worker config: Runner is required")
	case c.Capacity < 1:
		return fmt.Errorf("worker config: Capacity must be at least 1, got %d", c.Capacity)
	case c.Heartbeat >= c.Consumer.AckWait:
		return fmt.Errorf("worker config: Heartbeat %s must be shorter than Consumer.AckWait %s", c.Heartbeat, c.Consumer.AckWait)
	case c.PullWait < 100*time.Millisecond:
		return fmt.Errorf("worker config: PullWait %s is below 100ms", c.PullWait)
	}
	for _, p := range c.InboxPrefixes {
		if err := messages.CheckInboxPrefix(p); err != nil {
			return fmt.Errorf("worker config: InboxPrefixes: %w", err)
		}
	}
	if c.SealKey != nil {
		pub, err := c.SealKey.PublicKey()
		if _, perr := c.SealKey.PrivateKey(); err != nil || perr != nil || !nkeys.IsValidPublicCurveKey(pub) {
			return errors.New("worker config: SealKey must be a curve key pair with its seed (warren keys init writes one)")
		}
	}
	for i, p := range c.UnixSocketProfiles {
		if !slices.Contains(c.ExecProfiles, p) {
			return fmt.Errorf("worker config: UnixSocketProfiles[%d]: %q is not one of the exec profiles served %v", i, p, c.ExecProfiles)
		}
	}
	probe := messages.Task{V: messages.Version, ID: "x", Batch: "x", Kind: messages.KindExec, Argv: []string{"x"}, Pool: c.Pool}
	if err := probe.Validate(); err != nil {
		return fmt.Errorf("worker config: Pool: %w", err)
	}
	for _, p := range c.profiles() {
		probe.Profile = p
		if err := probe.Validate(); err != nil {
			return fmt.Errorf("worker config: profile %q: %w", p, err)
		}
	}
	return nil
}

// profiles is every profile served: exec profiles plus the verifier's.
func (c Config) profiles() []string {
	ps := append([]string(nil), c.ExecProfiles...)
	if c.Verifier != nil {
		ps = append(ps, c.Verifier.Profiles()...)
	}
	return ps
}
