package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
)

// docBroker is the broker URL the tenant section's context block names.
const docBroker = "tls://broker.example.org:4222"

// tenantFleet is an embedded broker enforcing an auth directory over TLS,
// with tenants alice and bob and a worker process on worker.creds.
type tenantFleet struct {
	a   *authE2E
	srv *embedded.Server
	js  jetstream.JetStream // the admin's
}

func startTenantFleet(t *testing.T) *tenantFleet {
	t.Helper()
	d, err := broker.InitAuthDir(t.TempDir(), broker.InitOptions{TLS: true})
	require.NoError(t, err)
	for _, name := range []string{"alice", "bob"} {
		_, err := d.AddSubmitter(name)
		require.NoError(t, err)
	}
	srv, err := embedded.New(embedded.Config{DataDir: t.TempDir(), Port: freeTCPPort(t), ConfigFile: d.ServerConf()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	f := &tenantFleet{srv: srv, a: &authE2E{dir: d.Dir, ca: d.State.TLS.CA, e: &e2e{dataDir: t.TempDir()},
		url: strings.Replace(srv.ClientURL(), "nats://", "tls://", 1)}}
	opts, _, err := broker.ClientAuth{CredsFile: filepath.Join(d.Dir, broker.AdminCreds), TLSCA: f.a.ca}.Options()
	require.NoError(t, err)
	nc, err := broker.Connect(ctx, f.a.url, "admin", opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	f.js, err = jetstream.New(nc)
	require.NoError(t, err)
	require.NoError(t, broker.Setup(ctx, f.js, broker.StreamConfig{}))
	_, err = broker.SetupTenants(ctx, f.js, broker.StreamConfig{}, d.Tenants(), false)
	require.NoError(t, err)
	workerErr := background(t, f.a.as(context.Background(), broker.WorkerCreds, "worker", "--capacity", "1", "--isolation", "none",
		"--insecure-no-isolation", "--scratch-root", t.TempDir(), "--host-id", "tenant-doc"))
	f.a.waitForWorker(t, workerErr)
	return f
}

// tenantShell runs scripts as tenant with the stock nats CLI: a home and
// nats config of its own, a working directory holding its creds file and
// the CA (as the doc's context block expects), and that block run first
// with alice's names replaced by tenant's and the broker by the fleet's.
func (f *tenantFleet) tenantShell(t *testing.T, natsBin, doc, tenant string, env ...string) func(ctx context.Context, script string) *exec.Cmd {
	t.Helper()
	work := t.TempDir()
	copyFile(t, filepath.Join(f.a.dir, tenant+".creds"), filepath.Join(work, tenant+".creds"))
	copyFile(t, f.a.ca, filepath.Join(work, "ca.pem"))
	base := append(withoutEnv(withoutEnv(os.Environ(), "NATS_CONTEXT"), "NATS_URL"), "PATH="+filepath.Dir(natsBin)+":"+os.Getenv("PATH"),
		"HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	base = append(base, env...)
	shell := func(ctx context.Context, script string) *exec.Cmd {
		c := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		c.Dir, c.Env = work, base
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return c
	}
	block := docBlock(t, doc, "tenant: context")
	require.Contains(t, block, docBroker)
	block = strings.ReplaceAll(strings.ReplaceAll(block, docBroker, f.a.url), "alice", tenant)
	ctx, cancel := context2m()
	defer cancel()
	out, err := shell(ctx, block).CombinedOutput()
	require.NoError(t, err, "the context block as %s: %s", tenant, out)
	return shell
}

func context2m() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o600))
}

// runScript runs script to completion; it returns stdout and stderr and
// fails the test when the script fails.
func runScript(t *testing.T, shell func(context.Context, string) *exec.Cmd, name, script string) (string, string) {
	t.Helper()
	ctx, cancel := context2m()
	defer cancel()
	c := shell(ctx, script)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	require.NoError(t, c.Run(), "%s\nstdout:\n%s\nstderr:\n%s", name, out.String(), errb.String())
	return out.String(), errb.String()
}

// shellCommands splits a doc block into its commands (continuation lines
// joined, comments and blank lines dropped).
func shellCommands(block string) []string {
	var cmds []string
	for _, c := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		if c = strings.TrimSpace(c); c != "" && !strings.HasPrefix(c, "#") {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// The "As a tenant" section of docs/protocol.md, run verbatim with the
// stock nats CLI against an embedded broker with auth and TLS and a real
// worker: alice writes and reads her manifest, watches her events,
// publishes a task, reads its result and her quota, cancels, lists the
// hosts. Each of those acts (every command of the blocks) run by bob,
// with his own valid context, is refused by the server, and leaves
// alice's data as it was. `nats --creds` is refused for both.
func TestProtocolWalkthroughAsATenant(t *testing.T) {
	natsBin := natsCLI(t)
	doc := protocolDoc(t)
	f := startTenantFleet(t)
	alice := f.tenantShell(t, natsBin, doc, "alice")

	out, _ := runScript(t, alice, "manifest", docBlock(t, doc, "tenant: manifest"))
	require.Contains(t, out, `"ids":["t1"]`)

	evCtx, evCancel := context2m()
	defer evCancel()
	evOut := startEvents(t, alice(evCtx, docBlock(t, doc, "tenant: events")), func() bool {
		return f.srv.HasInterestIn("alice", "warren.events.alice.demo.t1")
	})

	out, _ = runScript(t, alice, "submit", docBlock(t, doc, "tenant: submit"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	r, err := messages.DecodeResult([]byte(lines[len(lines)-1]))
	require.NoError(t, err, "the submit block's last line is the result: %s", out)
	require.Equal(t, messages.StatusOK, r.Status)
	require.Equal(t, "hi\n", string(r.Stdout))
	require.Equal(t, "alice.demo", r.Batch)

	out, _ = runScript(t, alice, "read", docBlock(t, doc, "tenant: read"))
	require.Contains(t, out, `"stdout":"hi\n"`, "the direct get prints the stored result")
	require.Contains(t, out, `"weight":1`, "alice reads her quota")

	runScript(t, alice, "cancel", docBlock(t, doc, "tenant: cancel"))
	out, _ = runScript(t, alice, "hosts", docBlock(t, doc, "tenant: hosts"))
	require.Contains(t, out, "default.tenant-doc")

	var types []messages.EventType
	require.Eventually(t, func() bool {
		types = nil
		for _, l := range strings.Split(evOut.String(), "\n") {
			if ev, err := messages.DecodeEvent([]byte(l)); err == nil {
				types = append(types, ev.Type)
			}
		}
		return slices.Contains(types, messages.EventExit)
	}, 30*time.Second, 10*time.Millisecond, "events seen: %s", evOut.String())
	require.Equal(t, messages.EventStarted, types[0])

	before := f.aliceState(t)
	bob := f.tenantShell(t, natsBin, doc, "bob", "NATS_TIMEOUT=2s")
	for _, block := range []string{"tenant: manifest", "tenant: events", "tenant: submit", "tenant: read", "tenant: cancel"} {
		for _, cmd := range shellCommands(docBlock(t, doc, block)) {
			t.Run(block+": "+cmd[:min(len(cmd), 48)], func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c := bob(ctx, cmd)
				var out, errb bytes.Buffer
				c.Stdout, c.Stderr = &out, &errb
				_ = c.Run() // `nats req` exits 0 on a refused publish: the server's word is what counts
				require.Contains(t, errb.String(), "Permissions Violation", "bob ran alice's %q; stdout:\n%s", cmd, out.String())
				require.NotContains(t, out.String(), "alice.demo", "bob got alice's data")
				require.NotContains(t, out.String(), "weight", "bob got alice's quota")
			})
		}
	}
	require.Equal(t, before, f.aliceState(t), "bob changed nothing of alice's")
	out, _ = runScript(t, bob, "hosts", docBlock(t, doc, "tenant: hosts"))
	require.Contains(t, out, "default.tenant-doc", "control: bob's context works, and every tenant reads the registry")

	// Stock --creds: refused, as the doc says.
	for _, tenant := range []string{"alice", "bob"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c := alice(ctx, fmt.Sprintf("nats --no-context --server %s --tlsca ca.pem --creds %s/%s.creds pub x y", f.a.url, f.a.dir, tenant))
		out, err := c.CombinedOutput()
		cancel()
		require.Error(t, err, "%s", out)
		require.Contains(t, string(out), "Authorization Violation")
	}
}

// aliceState is what bob must not change: alice's task count, manifest
// and cancel revisions.
func (f *tenantFleet) aliceState(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ns := messages.Namespace{Tenant: "alice"}
	s, err := f.js.Stream(ctx, ns.Tasks())
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	state := fmt.Sprintf("tasks=%d", info.State.Msgs)
	for _, bk := range [][2]string{{ns.Batches(), "alice.demo"}, {ns.Cancel(), "alice.demo.1"}} {
		bucket, key := bk[0], bk[1]
		kv, err := f.js.KeyValue(ctx, bucket)
		require.NoError(t, err)
		e, err := kv.Get(ctx, key)
		require.NoError(t, err, "%s %s", bucket, key)
		state += fmt.Sprintf(" %s=%d", bucket, e.Revision())
	}
	return state
}
