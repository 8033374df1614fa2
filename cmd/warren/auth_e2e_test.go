package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/internal/syncbuf"
	"github.com/warrenhq/warren/messages"
)

// authE2E is `warren broker --auth-dir` with real warren processes as
// clients, each with its own creds.
type authE2E struct {
	dir, url, ca string
	e            *e2e // only its data dir: the broker is the authenticated one
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// background starts a long-running warren process, stopped with SIGTERM
// at the end of the test (it must exit 0).
func background(t *testing.T, c *exec.Cmd) *syncbuf.Buffer {
	t.Helper()
	errb := &syncbuf.Buffer{} // the process writes while the test reads
	c.Stderr = errb
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		require.NoError(t, c.Wait(), "%s must exit 0 on SIGTERM; stderr:\n%s", c.Args[1], errb.String())
	})
	return errb
}

func startAuthE2E(t *testing.T) *authE2E {
	t.Helper()
	a := &authE2E{dir: t.TempDir(), e: &e2e{dataDir: t.TempDir()}}
	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), context.Background(), []string{"auth", "init", "--dir", a.dir, "--tls"}, stdio{Out: &out, Err: &errb}), errb.String())
	require.Contains(t, out.String(), "worker.creds")
	for _, name := range []string{"alice", "bob"} {
		require.NoError(t, run(context.Background(), context.Background(), []string{"auth", "add-submitter", name, "--dir", a.dir}, stdio{Out: &out, Err: &errb}))
	}
	a.ca = filepath.Join(a.dir, "tls", "ca.pem")
	port := freeTCPPort(t)
	a.url = fmt.Sprintf("tls://127.0.0.1:%d", port)
	brokerErr := background(t, a.plain(context.Background(), "broker", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--auth-dir", a.dir))
	opts, _, err := broker.ClientAuth{CredsFile: filepath.Join(a.dir, broker.AdminCreds), TLSCA: a.ca}.Options()
	require.NoError(t, err)
	require.Eventually(t, func() bool { return streamsReady(context.Background(), a.url, opts...) }, 30*time.Second, 50*time.Millisecond, "broker did not start: %s", brokerErr)
	return a
}

// plain is a warren process with no broker settings of its own.
func (a *authE2E) plain(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, os.Args[0], args...)
	c.Env = append(envWithout("WARREN_"), e2eMainEnv+"=1", "WARREN_DATA_DIR="+a.e.dataDir, "WARREN_LOG_LEVEL=warn",
		"WARREN_SESSION_AGENT="+os.Getenv("WARREN_SESSION_AGENT")) // TestMain's agent, as make build puts it next to warren
	return c
}

// as is a warren process connecting to the broker with name's creds.
func (a *authE2E) as(ctx context.Context, creds string, args ...string) *exec.Cmd {
	c := a.plain(ctx, args...)
	c.Env = append(c.Env, "WARREN_NATS_URL="+a.url, "WARREN_CREDS="+filepath.Join(a.dir, creds), "WARREN_TLS_CA="+a.ca)
	return c
}

// waitForWorker waits until a worker has registered (submit refuses a
// pool no live worker serves).
func (a *authE2E) waitForWorker(t *testing.T, workerErr fmt.Stringer) {
	t.Helper()
	require.Eventually(t, func() bool {
		out, _, code := runCmd(t, a.as(context.Background(), broker.AdminCreds, "hosts", "--json"))
		return code == 0 && strings.Contains(out, `"id"`)
	}, 30*time.Second, 100*time.Millisecond, "the worker did not register: %s", workerErr)
}

func runCmd(t *testing.T, c *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, errb.String())
	}
	return out.String(), errb.String(), code
}

// TestE2EAuthFleet: auth init, a broker enforcing it over TLS, a worker
// with worker.creds, and tenants submitting, collecting, streaming and
// cancelling with their own creds: the whole system works under auth.
func TestE2EAuthFleet(t *testing.T) {
	a := startAuthE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	workerErr := background(t, a.as(context.Background(), broker.WorkerCreds, "worker", "--capacity", "2", "--isolation", "none",
		"--insecure-no-isolation", "--scratch-root", t.TempDir(), "--host-id", "auth-e2e"))
	a.waitForWorker(t, workerErr)

	batch := writeBatch(t, 4, func(i int) string { return fmt.Sprintf("echo task-%d", i) })
	out, stderr, code := runCmd(t, a.as(ctx, "alice.creds", "submit", batch, "--wait"))
	require.Equal(t, 0, code, "submit as alice: %s\nworker: %s", stderr, workerErr)
	got := parseResults(t, out)
	require.Len(t, got, 4)
	var id string
	for tid, r := range got {
		require.Equal(t, messages.StatusOK, r.Status, tid)
		require.True(t, strings.HasPrefix(r.Batch, "alice."), "a tenant's batch carries its name: %s", r.Batch)
		require.Equal(t, "task-"+strings.TrimPrefix(tid, "t")+"\n", string(r.Stdout))
		id = r.Batch
	}

	// Re-attach by the name submit printed, and by the short name.
	out, stderr, code = runCmd(t, a.as(ctx, "alice.creds", "results", id))
	require.Equal(t, 0, code, stderr)
	require.Len(t, parseResults(t, out), 4)
	out, stderr, code = runCmd(t, a.as(ctx, "alice.creds", "results", strings.TrimPrefix(id, "alice.")))
	require.Equal(t, 0, code, stderr)
	require.Len(t, parseResults(t, out), 4)

	// Live events cross from the fleet account to the tenant's.
	out, stderr, code = runCmd(t, a.as(ctx, "bob.creds", "exec", "--", "sh", "-c", "echo live; exit 3"))
	require.Equal(t, 3, code, stderr)
	require.Equal(t, "live\n", out)

	_, stderr, code = runCmd(t, a.as(ctx, "alice.creds", "cancel", id))
	require.Equal(t, 0, code, stderr)

	// Replay is the admin's: the tenant is told so, the admin does it.
	_, stderr, code = runCmd(t, a.as(ctx, "alice.creds", "replay", id))
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "admin creds")
	out, stderr, code = runCmd(t, a.as(ctx, broker.AdminCreds, "replay", id, "--wait"))
	require.Equal(t, 0, code, stderr)
	require.Len(t, parseResults(t, out), 4, "the admin replays a tenant's batch")

	out, stderr, code = runCmd(t, a.as(ctx, "alice.creds", "hosts"))
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "auth-e2e", "a tenant reads the host registry")

	// Bob cannot read alice's batch: his name for it is his own.
	_, stderr, code = runCmd(t, a.as(ctx, "bob.creds", "results", id, "--no-wait"))
	require.NotEqual(t, 0, code, "bob read alice's results: %s", stderr)

	// A submitter cannot serve as a worker: it may not consume tasks.
	_, stderr, code = runCmd(t, a.as(ctx, "bob.creds", "worker", "--isolation", "none", "--insecure-no-isolation", "--scratch-root", t.TempDir()))
	require.NotEqual(t, 0, code, "a submitter started a worker: %s", stderr)
	require.Contains(t, stderr, "a worker needs a worker's")

	// No creds: the broker refuses the connection.
	c := a.plain(ctx, "results", id, "--no-wait", "--nats", a.url, "--tls-ca", a.ca)
	_, stderr, code = runCmd(t, c)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "Authorization Violation")

	// doctor, as the admin, reports the bus's protections.
	out, stderr, code = runCmd(t, a.as(ctx, broker.AdminCreds, "doctor"))
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	require.Regexp(t, `ok\s+broker TLS\s+TLS, server verified`, out)
	require.Regexp(t, `ok\s+broker auth\s+required; connected with admin credentials`, out)
	require.Regexp(t, `ok\s+stream WARREN_RESULTS\s+1 replica\(s\), compatible`, out)
}

// TestE2EAuthUp: `warren up --auth-dir` enforces the directory for its
// in-process worker and for clients.
func TestE2EAuthUp(t *testing.T) {
	a := &authE2E{dir: t.TempDir(), e: &e2e{dataDir: t.TempDir()}}
	require.NoError(t, run(context.Background(), context.Background(), []string{"auth", "init", "--dir", a.dir}, stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}))
	require.NoError(t, run(context.Background(), context.Background(), []string{"auth", "add-submitter", "carol", "--dir", a.dir}, stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}))
	port := freeTCPPort(t)
	a.url = fmt.Sprintf("nats://127.0.0.1:%d", port)
	upErr := background(t, a.plain(context.Background(), "up", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--auth-dir", a.dir,
		"--isolation", "none", "--insecure-no-isolation", "--scratch-root", t.TempDir(), "--capacity", "1"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := []string{"WARREN_NATS_URL=" + a.url, "WARREN_CREDS=" + filepath.Join(a.dir, "carol.creds")}
	require.Eventually(t, func() bool {
		c := a.plain(ctx, "hosts")
		c.Env = append(c.Env, env...)
		out, _, code := runCmd(t, c)
		return code == 0 && strings.Contains(out, "default")
	}, time.Minute, 100*time.Millisecond, "up did not register its worker: %s", upErr)
	c := a.plain(ctx, "exec", "--", "echo", "hi")
	c.Env = append(c.Env, env...)
	out, stderr, code := runCmd(t, c)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "hi\n", out)
	c = a.plain(ctx, "exec", "--nats", a.url, "--", "echo", "hi")
	_, stderr, code = runCmd(t, c)
	require.NotEqual(t, 0, code, "no creds")
	require.Contains(t, stderr, "Authorization Violation")

	// Secrets need no --seal-key: up opens them with the directory's pool
	// key, which its worker publishes and carol pins on first use.
	carol := func(ctx context.Context, args ...string) *exec.Cmd {
		c := a.plain(ctx, args...)
		c.Env = append(c.Env, env...)
		return c
	}
	out, stderr, code = secretExec(t, carol)
	require.Zero(t, code, stderr)
	require.Equal(t, "tok=***\n", out)
	require.Contains(t, stderr, "pinned the seal key")
	d, err := broker.OpenAuthDir(a.dir)
	require.NoError(t, err)
	pinned := d.State.PoolXKeys["default"]
	require.True(t, nkeys.IsValidPublicCurveKey(pinned))

	// Under auth a holder of the pool's worker creds may write its
	// registry entries: a key of its own is refused all the same.
	opts, _, err := broker.ClientAuth{CredsFile: filepath.Join(a.dir, broker.WorkerCreds)}.Options()
	require.NoError(t, err)
	nc, err := broker.Connect(ctx, a.url, "rogue-worker", opts...)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, messages.BucketHosts)
	require.NoError(t, err)
	rogueKP, err := nkeys.CreateCurveKeys()
	require.NoError(t, err)
	rogue, err := rogueKP.PublicKey()
	require.NoError(t, err)
	remove := putRogueHost(t, kv, "rogue-2", rogue)
	_, stderr, code = secretExec(t, carol)
	requireSealRefused(t, stderr, code, "rogue-2", pinned, rogue)
	remove()
	out, stderr, code = secretExec(t, carol)
	require.Zero(t, code, "control: the stranger gone: %s", stderr)
	require.Equal(t, "tok=***\n", out)
}

func TestE2EBrokerRefusesToListenBeyondLoopbackWithoutAuth(t *testing.T) {
	a := &authE2E{e: &e2e{dataDir: t.TempDir()}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := fmt.Sprintf("0.0.0.0:%d", freeTCPPort(t))
	for _, args := range [][]string{{"broker", "--listen", addr}, {"up", "--listen", addr}} {
		_, stderr, code := runCmd(t, a.plain(ctx, args...))
		require.NotEqual(t, 0, code, "%v started without auth", args)
		require.Contains(t, stderr, "warren auth init", args)
		require.Contains(t, stderr, "--auth-dir", args)
	}
	// Authentication alone is not enough beyond loopback: TLS too.
	d := t.TempDir()
	require.NoError(t, run(context.Background(), context.Background(), []string{"auth", "init", "--dir", d}, stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}))
	_, stderr, code := runCmd(t, a.plain(ctx, "broker", "--listen", addr, "--auth-dir", d))
	require.NotEqual(t, 0, code, "auth without TLS beyond loopback")
	require.Contains(t, stderr, "without TLS")
	// The control: the explicit opt-out starts it.
	errb := background(t, a.plain(context.Background(), "broker", "--listen", addr, "--insecure-no-auth"))
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return streamsReady(ctx, "nats://127.0.0.1:"+port) }, 30*time.Second, 50*time.Millisecond,
		"--insecure-no-auth did not start: %s", errb)
}

// envWithout is the environment minus variables starting with prefix.
func envWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// streamsReady reports whether the broker at url has set up its streams
// and buckets (broker.Missing finds none missing).
func streamsReady(ctx context.Context, url string, opts ...nats.Option) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	nc, err := broker.Connect(ctx, url, "probe", opts...)
	if err != nil {
		return false
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return false
	}
	missing, err := broker.Missing(ctx, js)
	return err == nil && len(missing) == 0
}

// TestE2EAuthQuotaAppliesLive: `warren auth quota` on the directory of a
// running `warren broker --auth-dir` changes the tenant's limits on the
// broker within seconds (it writes auth.json only; server.conf is
// unchanged, so no reload does it).
func TestE2EAuthQuotaAppliesLive(t *testing.T) {
	a := startAuthE2E(t)
	opts, _, err := broker.ClientAuth{CredsFile: filepath.Join(a.dir, broker.AdminCreds), TLSCA: a.ca}.Options()
	require.NoError(t, err)
	nc, err := nats.Connect(a.url, opts...)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	maxMsgs := func() int64 {
		s, err := js.Stream(context.Background(), messages.Namespace{Tenant: "bob"}.Tasks())
		if err != nil {
			return 0
		}
		return s.CachedInfo().Config.MaxMsgs
	}
	var before int64
	require.Eventually(t, func() bool { before = maxMsgs(); return before != 0 }, 10*time.Second, 50*time.Millisecond, "bob's stream exists")
	require.NotEqual(t, int64(40), before, "the control: not the new quota yet")
	conf, err := os.ReadFile(filepath.Join(a.dir, broker.ServerConfFile))
	require.NoError(t, err)

	var out, errb bytes.Buffer
	require.NoError(t, run(context.Background(), context.Background(), []string{"auth", "quota", "bob", "task_msgs=40", "--dir", a.dir}, stdio{Out: &out, Err: &errb}), errb.String())
	after, err := os.ReadFile(filepath.Join(a.dir, broker.ServerConfFile))
	require.NoError(t, err)
	require.Equal(t, conf, after, "a quota leaves the server's configuration as it was")
	require.Eventually(t, func() bool { return maxMsgs() == 40 }, 15*time.Second, 100*time.Millisecond, "bob's task stream has the new quota")
}
