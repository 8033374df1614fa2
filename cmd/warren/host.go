//go:build !client

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/verify"
	"github.com/warrenhq/warren/worker"
)

// The checkers' Service is the worker's Verifier as it is (no adapter).
var _ worker.Verifier = (*verify.Service)(nil)

// host is the composition root of one machine's part of Warren: the link
// to its broker, the sandbox runner, the verifier and the worker serving
// them, and the metrics server. `warren up`, `warren worker` and a client's
// embedded broker each build one; only the link differs. newHost checks the
// flags and starts nothing; Start brings the parts up in order and Stop
// takes down what Start brought up, in reverse: callers have nothing else to
// close.
type host struct {
	log     zerolog.Logger
	inboxes []string // the globals' inbox prefixes
	f       workerFlags
	link    hostLink

	iso      sandbox.Isolation
	disk     int64           // --disk: each task home's limit (-1 unbounded), and the worker's admission
	ceilings messages.Limits // --max-*: the largest limits a task may ask for (zero: the worker's defaults)
	profiles *verify.Profiles
	sealKey  nkeys.KeyPair
	obs      *obsServer // nil without --metrics-listen

	startOnce sync.Once
	startDone chan struct{}                 // closed when Start has returned (or Stop came first)
	stops     []func(context.Context) error // what Start brought up; Stop runs them last first
	stopOnce  sync.Once
	stopErr   error
}

// hostLink is how a host's worker reaches its broker: the one part that
// differs between `up` (a broker of its own), `worker` (a remote one) and a
// client's embedded broker (the client's connection owns it).
type hostLink interface {
	// open returns the worker's connection.
	open(ctx context.Context) (*nats.Conn, error)
	// close releases what open made.
	close()
}

// ceilingsFrom reads the --max-* flags; zero fields take the worker's
// defaults.
func ceilingsFrom(f workerFlags) (messages.Limits, error) {
	var c messages.Limits
	if f.MaxMemory != "" {
		n, err := parseSize(f.MaxMemory)
		if err != nil {
			return c, fmt.Errorf("--max-memory: %w", err)
		}
		c.MemoryBytes = n
	}
	if f.MaxTime < 0 || f.MaxProcesses < 0 {
		return c, fmt.Errorf("--max-time and --max-processes must not be negative")
	}
	c.WallTimeoutMS, c.CPUTimeMS = f.MaxTime.Milliseconds(), f.MaxTime.Milliseconds()
	c.Processes = f.MaxProcesses
	return c, nil
}

// newHost checks f (fail early, before anything runs) and loads what the
// host needs from files: verify profiles and the seal key.
// g gives the logger and the inbox prefixes.
func newHost(g *globals, f workerFlags, link hostLink) (*host, error) {
	h := &host{log: g.Log, inboxes: g.InboxPrefixes, f: f, link: link, iso: sandbox.Isolation(f.Isolation),
		sealKey: f.sealKey, startDone: make(chan struct{})}
	if h.iso == sandbox.IsolationNone && !f.InsecureNoIsolation {
		return nil, fmt.Errorf("--isolation=none runs untrusted tasks without a sandbox; add --insecure-no-isolation if that is really what you want")
	}
	var err error
	if h.disk, err = parseDisk(f.Disk); err != nil {
		return nil, fmt.Errorf("--disk: %w", err)
	}
	if h.ceilings, err = ceilingsFrom(f); err != nil {
		return nil, err
	}
	if f.VerifyProfiles != "" {
		h.profiles, err = verify.LoadProfiles(f.VerifyProfiles)
	} else {
		h.profiles, err = verify.BuiltinProfiles()
	}
	if err != nil {
		return nil, err
	}
	if f.SealKey != "" {
		if h.sealKey, err = loadSealKey(f.SealKey); err != nil {
			return nil, err
		}
	}
	if f.MetricsListen != "" {
		h.obs = newObsServer(f.MetricsListen, g.Log)
	}
	return h, nil
}

// Start connects, starts the sandbox runner and proves it works by running
// a probe sandbox (fail closed: no isolation, no worker), then the metrics
// server, the verifier and the worker. When a part fails, what had started
// is stopped before Start returns. ctx bounds the start only.
func (h *host) Start(ctx context.Context) error {
	err := errors.New("host: already started or stopped")
	h.startOnce.Do(func() {
		defer close(h.startDone)
		if err = h.start(ctx); err != nil {
			h.stop(context.Background())
		}
	})
	return err
}

func (h *host) start(ctx context.Context) error {
	nc, err := h.link.open(ctx)
	if err != nil {
		return err
	}
	h.push(func(context.Context) error { h.link.close(); return nil })
	if h.obs != nil {
		h.push(func(context.Context) error { h.obs.Stop(); return nil })
		if err := h.registerLinkMetrics(); err != nil {
			return err
		}
	}

	runner, err := sandbox.New(h.f.apply(sandbox.Config{
		Defaults:      sandbox.Limits{Disk: h.disk},
		Isolation:     h.iso,
		AllowInsecure: h.f.InsecureNoIsolation,
		Logger:        h.log,
		// One warm sandbox per slot (the worker's default capacity is one
		// slot per CPU), and one more: after each task a slot makes its
		// next task's init, and meanwhile a task finds the spare
		// ready (docs/benchmarks.md, "A spare slot").
		Prestart: min(cmp.Or(h.f.Capacity, runtime.NumCPU())+1, 64),
	}))
	if err != nil {
		return err
	}
	// Warm sandboxes must not outlive the runner: closed after the worker
	// and the verifier.
	h.push(func(context.Context) error { return runner.Close() })
	// Sweeps what dead workers left and starts the warm pool.
	if err := runner.Start(ctx); err != nil {
		return err
	}
	inForce, err := selfTest(ctx, runner)
	if err != nil {
		return fmt.Errorf("this host cannot run %s sandboxes: %w\nrun `warren doctor` for what is missing and how to fix it", h.iso, err)
	}
	if h.iso == sandbox.IsolationNone {
		h.log.Warn().Msg("INSECURE: tasks run without isolation (--insecure-no-isolation)")
	}
	if len(h.f.UnixSocketProfiles) > 0 && h.iso != sandbox.IsolationNone && !strings.Contains(inForce, "namespace") {
		return fmt.Errorf("--unix-socket-profile needs a mount namespace, and this host's sandboxes run with %s: without one the host's pathname unix sockets (/tmp, /run) would be reachable; drop the flag or fix namespace isolation (`warren doctor`)", inForce)
	}

	svc, err := h.verifier(nc)
	if err != nil {
		return err
	}
	var verifier worker.Verifier // nil: no verify profile served
	if svc != nil {
		verifier = svc
	}
	var reg prometheus.Registerer
	if h.obs != nil {
		reg = h.obs.Registry()
	}
	w, err := worker.New(nc, worker.Config{
		SealKey:            h.sealKey,
		InboxPrefixes:      h.inboxes,
		Verifier:           verifier,
		HostID:             h.f.HostID,
		Pool:               h.f.Pool,
		Capacity:           h.f.Capacity,
		DiskBytes:          h.disk,
		Ceilings:           h.ceilings,
		ExecProfiles:       h.f.Profiles,
		UnixSocketProfiles: h.f.UnixSocketProfiles,
		Runner:             runner,
		Isolation:          []messages.Isolation{messages.Isolation(inForce)},
		PullWait:           h.f.pullWait,
		Version:            version,
		Logger:             h.log,
		Metrics:            reg,
	})
	if err != nil {
		return err
	}
	if h.obs != nil {
		// The probe sandbox passed above; streams are checked by the
		// worker's Start. Serving before it: /healthz answers during
		// setup, and /readyz says not ready until the worker serves.
		h.obs.AddReadyCheck("worker", w.Ready)
		if err := h.obs.Start(ctx); err != nil {
			return err
		}
	}
	if svc != nil {
		// Warm REPL pools start before the first pull, so no task waits
		// for one; they stop after the worker, before the runner.
		h.push(func(context.Context) error { return svc.Close() })
		if err := svc.Start(ctx, runner.Run); err != nil {
			return fmt.Errorf("start verifier: %w", err)
		}
	}
	// Sandbox sessions (worker_sessions.go) share the worker's slots and
	// its drain deadline; nil when this host serves none.
	sessions, err := h.sessions(w)
	if err != nil {
		return err
	}
	h.push(func(ctx context.Context) error { return stopAll(ctx, w, sessions) })
	if err := w.Start(ctx); err != nil {
		return err
	}
	if sessions != nil {
		return sessions.Start(ctx)
	}
	return nil
}

// verifier offers the verify profiles whose checker is installed here, with
// the shared verdict cache unless --no-verdict-cache; nil when none is.
func (h *host) verifier(nc *nats.Conn) (*verify.Service, error) {
	checker, err := verify.New(verify.Config{Logger: h.log})
	if err != nil {
		return nil, err
	}
	var cache verify.VerdictCache
	if !h.f.NoVerdictCache {
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, err
		}
		cache = verify.NewKVCache(js)
	}
	svc, skipped := verify.NewService(checker, h.profiles, cache)
	for name, why := range skipped {
		h.log.Info().Str("profile", name).Str("reason", why.Error()).Msg("verify profile not offered: its checker is not installed or cannot be prepared here")
	}
	if len(svc.Profiles()) == 0 {
		return nil, nil
	}
	return svc, nil
}

// linkMetrics is a link with metrics of its own (`up`'s broker).
type linkMetrics interface{ metrics() []prometheus.Collector }

// registerLinkMetrics registers the link's collectors, if it has any.
func (h *host) registerLinkMetrics() error {
	lm, ok := h.link.(linkMetrics)
	if !ok {
		return nil
	}
	for _, c := range lm.metrics() {
		if err := h.obs.Registry().Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// push records how to stop a part that has started (only start calls it).
func (h *host) push(stop func(context.Context) error) { h.stops = append(h.stops, stop) }

// Stop drains the worker (ctx bounds the drain: then running tasks are
// cancelled and handed back), then stops the verifier, the runner, the
// metrics server and the link, in that order, and returns the first error
// (the worker's drain error: ctx's). Safe to call more than once and
// before Start; during Start it waits for Start to end.
func (h *host) Stop(ctx context.Context) error {
	// Before Start: nothing to stop, and a later Start refuses.
	h.startOnce.Do(func() { close(h.startDone) })
	<-h.startDone
	return h.stop(ctx)
}

// stop runs the recorded stops once, last first.
func (h *host) stop(ctx context.Context) error {
	h.stopOnce.Do(func() {
		for i := len(h.stops) - 1; i >= 0; i-- {
			if err := h.stops[i](ctx); err != nil && h.stopErr == nil {
				h.stopErr = err
			}
		}
		h.stops = nil
	})
	return h.stopErr
}

// serve starts the host, calls ready, and runs until the first signal,
// then drains; a second signal (or the drain timeout) cancels running
// tasks, which go back to the queue.
func (h *host) serve(g *globals, ready func()) error {
	if err := h.Start(g.Ctx); err != nil {
		if g.Ctx.Err() != nil {
			return nil // stopped while starting: a stop, not a failure
		}
		return err
	}
	if ready != nil {
		ready()
	}
	<-g.Ctx.Done()
	h.log.Info().Dur("drain_timeout", h.f.DrainTimeout).Msg("draining: no new tasks; waiting for running ones (signal again to cancel them)")
	ctx, cancel := context.WithTimeout(g.HardCtx, h.f.DrainTimeout)
	defer cancel()
	err := h.Stop(ctx)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// selfTest runs /bin/true in the configured mode and returns what was in
// force: creating a namespace proves nothing, running a command in one does.
func selfTest(ctx context.Context, r *sandbox.Runner) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := r.Run(ctx, sandbox.Spec{Argv: []string{"/bin/true"}})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("probe sandbox exited %d (signal %q)", res.ExitCode, res.Signal)
	}
	return res.InForce, nil
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"
