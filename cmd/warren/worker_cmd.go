package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/verify"
	"github.com/warrenhq/warren/verify/verifyworker"
	"github.com/warrenhq/warren/worker"
)

// workerFlags configure a worker; shared by `worker` and `up`.
type workerFlags struct {
	Capacity            int           `help:"Sandbox slots: the most tasks this host runs at once. 0 means one per CPU." default:"0"`
	Disk                string        `help:"Disk limit of each task's home (a tmpfs: held in memory), also the most a task's limits.disk_bytes may ask; 'unbounded' leaves homes on the host's disk. --capacity × --disk must fit the host's memory and swap." default:"1G" placeholder:"SIZE"`
	Pool                string        `help:"Worker pool to serve." default:"default"`
	Profiles            []string      `name:"profile" help:"Exec profiles served (repeatable)." default:"default"`
	Isolation           string        `help:"Sandbox mode: auto (strongest available, refuse if none), namespace, landlock, or none (needs --insecure-no-isolation)." enum:"auto,namespace,landlock,none" default:"auto"`
	InsecureNoIsolation bool          `name:"insecure-no-isolation" help:"Allow --isolation=none: tasks run WITHOUT a sandbox (timeouts, process-group kill, output caps and a cleared environment only). Never for untrusted code."`
	HostID              string        `name:"host-id" help:"Name of this host in results and the registry (default: hostname-pid)."`
	VerifyProfiles      string        `name:"verify-profiles" help:"Verify profiles file (see deploy/profiles.yaml). Defaults to the built-in coq profiles. Profiles whose checker is not installed are not offered." type:"path"`
	SealKey             string        `name:"seal-key" env:"WARREN_SEAL_KEY" help:"The pool's seed file (warren keys init) that opens tasks' sealed secrets. Without it, a task with secrets gets a secrets_unavailable result." type:"path"`
	MetricsListen       string        `name:"metrics-listen" help:"Serve Prometheus metrics (/metrics) and health checks (/healthz, /readyz) on this host:port, e.g. 127.0.0.1:9464. Off by default."`
	NoVerdictCache      bool          `name:"no-verdict-cache" help:"Check every proof, never answering one from the shared verdict cache (bucket warren_verdicts)."`
	DrainTimeout        time.Duration `name:"drain-timeout" help:"On the first SIGTERM/SIGINT, how long running tasks may finish before they are cancelled and handed back to the queue." default:"5m"`
	sandboxHostFlags

	pullWait time.Duration   // shorter for a client's short-lived in-process worker
	sealKey  nkeys.KeyPair   // used when SealKey (a file) is not given
	runner   *sandbox.Runner // set by buildWorker; Close it after the worker stops
	obs      *obsServer      // set by buildWorker when --metrics-listen is given
}

// buildWorker creates the sandbox runner, proves it works by running a
// probe sandbox (fail closed: no isolation, no worker), and the worker.
func (f *workerFlags) buildWorker(ctx context.Context, g *globals, nc *nats.Conn) (*worker.Worker, error) {
	iso := sandbox.Isolation(f.Isolation)
	if iso == sandbox.IsolationNone && !f.InsecureNoIsolation {
		return nil, fmt.Errorf("--isolation=none runs untrusted tasks without a sandbox; add --insecure-no-isolation if that is really what you want")
	}
	disk, err := parseDisk(f.Disk)
	if err != nil {
		return nil, fmt.Errorf("--disk: %w", err)
	}
	runner, err := sandbox.New(f.apply(sandbox.Config{
		Defaults:      sandbox.Limits{Disk: disk},
		Isolation:     iso,
		AllowInsecure: f.InsecureNoIsolation,
		Logger:        g.Log,
		// One warm sandbox per slot (the worker's default capacity is one
		// slot per CPU).
		Prestart: min(cmp.Or(f.Capacity, runtime.NumCPU()), 64),
	}))
	if err != nil {
		return nil, err
	}
	f.runner = runner
	inForce, err := selfTest(ctx, runner)
	if err != nil {
		_ = runner.Close()
		return nil, fmt.Errorf("this host cannot run %s sandboxes: %w\nrun `warren doctor` for what is missing and how to fix it", iso, err)
	}
	if iso == sandbox.IsolationNone {
		g.Log.Warn().Msg("INSECURE: tasks run without isolation (--insecure-no-isolation)")
	}
	verifier, err := f.buildVerifier(g, nc)
	if err != nil {
		return nil, err
	}
	sealKey := f.sealKey
	if f.SealKey != "" {
		if sealKey, err = loadSealKey(f.SealKey); err != nil {
			return nil, err
		}
	}
	var reg prometheus.Registerer
	if f.MetricsListen != "" {
		f.obs = newObsServer(f.MetricsListen, g.Log)
		reg = f.obs.Registry()
	}
	w, err := worker.New(nc, worker.Config{
		SealKey:       sealKey,
		InboxPrefixes: g.InboxPrefixes,
		Verifier:      verifier,
		HostID:        f.HostID,
		Pool:          f.Pool,
		Capacity:      f.Capacity,
		DiskBytes:     disk,
		ExecProfiles:  f.Profiles,
		Runner:        runner,
		Isolation:     []messages.Isolation{messages.Isolation(inForce)},
		PullWait:      f.pullWait,
		Version:       version,
		Logger:        g.Log,
		Metrics:       reg,
	})
	if err != nil {
		return nil, err
	}
	if f.obs != nil {
		// The probe sandbox passed above; streams are checked by Start.
		f.obs.AddReadyCheck("worker", w.Ready)
	}
	return w, nil
}

// buildVerifier loads the verify profiles and offers those installed here.
func (f *workerFlags) buildVerifier(g *globals, nc *nats.Conn) (worker.Verifier, error) {
	var ps *verify.Profiles
	var err error
	if f.VerifyProfiles != "" {
		ps, err = verify.LoadProfiles(f.VerifyProfiles)
	} else {
		ps, err = verify.BuiltinProfiles()
	}
	if err != nil {
		return nil, err
	}
	checker, err := verify.New(verify.Config{Logger: g.Log})
	if err != nil {
		return nil, err
	}
	var cache verify.VerdictCache
	if !f.NoVerdictCache {
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, err
		}
		cache = verify.NewKVCache(js)
	}
	svc, skipped := verify.NewService(checker, ps, cache)
	for name, why := range skipped {
		g.Log.Info().Str("profile", name).Str("reason", why.Error()).Msg("verify profile not offered: its checker is not installed here")
	}
	if len(svc.Profiles()) == 0 {
		return nil, nil
	}
	return verifyworker.New(svc), nil
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

// serve runs w until the first signal, then drains; a second signal (or the
// drain timeout) cancels running tasks, which go back to the queue.
func (f *workerFlags) serve(g *globals, w *worker.Worker) error {
	if f.obs != nil {
		// Before the worker starts: /healthz answers during setup, and
		// /readyz says not ready until the worker serves.
		if err := f.obs.Start(g.Ctx); err != nil {
			return err
		}
		defer f.obs.Stop()
	}
	if err := w.Start(g.Ctx); err != nil {
		return err
	}
	<-g.Ctx.Done()
	g.Log.Info().Dur("drain_timeout", f.DrainTimeout).Msg("draining: no new tasks; waiting for running ones (signal again to cancel them)")
	ctx, cancel := context.WithTimeout(g.HardCtx, f.DrainTimeout)
	defer cancel()
	err := w.Stop(ctx)
	// Warm sandboxes must not outlive the worker's runner.
	_ = f.runner.Close()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

type workerCmd struct {
	workerFlags
}

func (c *workerCmd) Run(g *globals) error {
	url, rec, err := g.target()
	if err != nil {
		return err
	}
	if url == "" {
		return fmt.Errorf("no broker to serve: pass --nats URL (or set WARREN_NATS_URL), or start `warren broker` with this --data-dir (%s)", g.DataDir)
	}
	if c, err := g.loadCreds(); err != nil {
		return err
	} else if c != nil && c.Role != broker.RoleWorker && c.Role != broker.RoleAdmin {
		return fmt.Errorf("--creds %s are %s credentials; a worker needs a worker's (AUTH_DIR/%s)", g.Creds, c.Role, broker.WorkerCreds)
	}
	sess, err := g.dialChecked(g.Ctx, url, "warren-worker", rec)
	if err != nil {
		return err
	}
	defer sess.Close()
	w, err := c.buildWorker(g.Ctx, g, sess.NC)
	if err != nil {
		return err
	}
	return c.serve(g, w)
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"
