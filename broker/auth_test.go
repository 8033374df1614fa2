package broker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// authFleet is a broker enforcing an auth directory with tenants alice
// and bob, over TLS from the directory's private CA.
type authFleet struct {
	dir *broker.AuthDir
	srv *embedded.Server
	url string
}

func startAuthFleet(t testing.TB) *authFleet {
	t.Helper()
	d, err := broker.InitAuthDir(t.TempDir(), broker.InitOptions{TLS: true})
	require.NoError(t, err)
	for _, name := range []string{"alice", "bob"} {
		_, err := d.AddSubmitter(name)
		require.NoError(t, err)
	}
	srv, err := embedded.New(embedded.Config{DataDir: t.TempDir(), Port: -1, ConfigFile: d.ServerConf(), ReloadInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	f := &authFleet{dir: d, srv: srv, url: srv.ClientURL()}
	admin := f.as(t, broker.AdminCreds)
	require.NoError(t, broker.Setup(ctx, admin.js, broker.StreamConfig{}))
	_, err = broker.SetupTenants(ctx, admin.js, broker.StreamConfig{}, d.Tenants(), false)
	require.NoError(t, err)
	_, err = broker.EnsureConsumer(ctx, admin.js, messages.DefaultPool, messages.DefaultProfile, broker.ConsumerConfig{})
	require.NoError(t, err)
	return f
}

// client is one authenticated connection and the async errors the server
// sent it (permission violations arrive that way).
type client struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	errs chan error
}

func (f *authFleet) as(t testing.TB, credsFile string) *client {
	t.Helper()
	c, err := f.dial(credsFile, f.dir.State.TLS.CA)
	require.NoError(t, err)
	t.Cleanup(c.nc.Close)
	return c
}

func (f *authFleet) dial(credsFile, ca string) (*client, error) {
	a := broker.ClientAuth{TLSCA: ca}
	if credsFile != "" {
		a.CredsFile = filepath.Join(f.dir.Dir, credsFile)
	}
	opts, creds, err := a.Options()
	if err != nil {
		return nil, err
	}
	c := &client{errs: make(chan error, 64)}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case c.errs <- err:
		default:
		}
	}), nats.MaxReconnects(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.nc, err = broker.Connect(ctx, f.url, "authtest", opts...)
	if err != nil {
		return nil, err
	}
	if creds != nil && creds.Role == broker.RoleSubmitter {
		c.js, err = jetstream.NewWithAPIPrefix(c.nc, broker.TenantAPIPrefix)
	} else {
		c.js, err = jetstream.New(c.nc)
	}
	return c, err
}

// refused waits for the server's permissions violation naming subject.
func (c *client) refused(t *testing.T, subject string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-c.errs:
			if strings.Contains(strings.ToLower(err.Error()), "permissions violation") && strings.Contains(err.Error(), subject) {
				return
			}
			t.Logf("other async error: %v", err)
		case <-deadline:
			t.Fatalf("no permissions violation from the server for %q", subject)
		}
	}
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tenantClient is a scheduler client of tenant on c, as the CLI makes it.
func tenantClient(t *testing.T, c *client, tenant string) *scheduler.Client {
	t.Helper()
	sc, err := scheduler.New(c.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: tenant})
	require.NoError(t, err)
	return sc
}

// runOne publishes task alone as tenant's batch and returns its result.
func runOne(t *testing.T, sc *scheduler.Client, tenant, batch string, task messages.Task) *messages.Result {
	t.Helper()
	b, err := scheduler.NewBatch([]messages.Task{task}, scheduler.BatchOptions{Batch: batch, Tenant: tenant})
	require.NoError(t, err)
	_, err = sc.Publish(ctx10(t), b)
	require.NoError(t, err)
	var got *messages.Result
	_, err = sc.Collect(ctx10(t), scheduler.CollectOptions{Batch: b.ID, OnResult: func(r *messages.Result) error { got = r; return nil }})
	require.NoError(t, err)
	return got
}

func TestAuthInitConfigLoadsWithServerParser(t *testing.T) {
	d, err := broker.InitAuthDir(t.TempDir(), broker.InitOptions{TLS: true})
	require.NoError(t, err)
	_, err = d.AddSubmitter("alice")
	require.NoError(t, err)
	opts, err := server.ProcessConfigFile(d.ServerConf())
	require.NoError(t, err)
	names := map[string]bool{}
	for _, a := range opts.Accounts {
		names[a.Name] = true
	}
	require.True(t, names[broker.FleetAccount] && names["alice"], "accounts %v", names)
	require.Len(t, opts.Nkeys, 3, "admin, worker and alice are nkey users")
	require.NotNil(t, opts.TLSConfig, "the directory's certificate is served")
	for _, f := range []string{broker.AdminCreds, broker.WorkerCreds, "alice.creds", "pool-default.xkey"} {
		fi, err := os.Stat(filepath.Join(d.Dir, f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	c, err := broker.LoadCreds(filepath.Join(d.Dir, "alice.creds"))
	require.NoError(t, err)
	require.Equal(t, broker.RoleSubmitter, c.Role)
	require.Equal(t, "alice", c.Tenant)
	_, err = broker.InitAuthDir(d.Dir, broker.InitOptions{})
	require.ErrorContains(t, err, "already exists", "keys are never silently replaced")
}

// TestAuthTenantsCannotTouchEachOther: every cross-tenant act is refused
// by the server, and the same act by its rightful owner succeeds.
func TestAuthTenantsCannotTouchEachOther(t *testing.T) {
	f := startAuthFleet(t)
	admin := f.as(t, broker.AdminCreds)
	worker := f.as(t, broker.WorkerCreds)
	alice := f.as(t, "alice.creds")
	bob := f.as(t, "bob.creds")
	taskSubj := messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, "alice.b1")
	resSubj := messages.ResultSubject("alice.b1", 1, "t1")

	aliceNS := messages.Namespace{Tenant: "alice"}

	// Controls that also seed the state: alice publishes a task, the
	// worker pulls it from her own task stream and stores its result and
	// an event.
	_, err := alice.js.Publish(ctx10(t), taskSubj, []byte(`{"id":"t1"}`))
	require.NoError(t, err, "a tenant publishes its own tasks")
	cons, err := broker.EnsureTaskConsumer(ctx10(t), worker.js, aliceNS, messages.DefaultPool, messages.DefaultProfile, broker.ConsumerConfig{})
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	var pulled int
	for m := range batch.Messages() {
		pulled++
		require.NoError(t, m.Ack())
	}
	require.Equal(t, 1, pulled, "the worker consumes its pool's tasks")
	_, err = worker.js.Publish(ctx10(t), resSubj, []byte(`{"status":"ok"}`))
	require.NoError(t, err, "the worker stores results")
	hosts, err := worker.js.KeyValue(ctx10(t), messages.BucketHosts)
	require.NoError(t, err)
	_, err = hosts.Put(ctx10(t), "default.h1", []byte(`{}`))
	require.NoError(t, err, "the worker writes its pool's host registry entries")
	go func() { _, _ = hosts.Put(ctx10(t), "gpu.h1", []byte(`{}`)) }()
	worker.refused(t, "$KV.warren_hosts.gpu.h1")

	t.Run("read another tenant's results", func(t *testing.T) {
		go func() {
			_, _ = bob.js.OrderedConsumer(ctx10(t), aliceNS.Results(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{messages.BatchResultFilter("alice.b1", 1)}})
		}()
		bob.refused(t, "$WJS.API.CONSUMER.CREATE.WARREN_RESULTS_alice.")
		_ = bob.nc.Publish("$WJS.API.DIRECT.GET."+aliceNS.Results()+"."+resSubj, nil)
		bob.refused(t, "$WJS.API.DIRECT.GET.WARREN_RESULTS_alice.warren.results.alice")
		s, err := alice.js.Stream(ctx10(t), aliceNS.Results())
		require.NoError(t, err)
		m, err := s.GetLastMsgForSubject(ctx10(t), resSubj)
		require.NoError(t, err, "the owner reads its result")
		require.Equal(t, `{"status":"ok"}`, string(m.Data))
		oc, err := alice.js.OrderedConsumer(ctx10(t), aliceNS.Results(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{messages.BatchResultFilter("alice.b1", 1)}})
		require.NoError(t, err)
		got, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err, "the owner consumes its results")
		require.Equal(t, resSubj, got.Subject())
	})
	t.Run("read another tenant's events", func(t *testing.T) {
		_, err := bob.nc.SubscribeSync(messages.SubjectEventsPrefix + ".alice.>")
		require.NoError(t, err)
		bob.refused(t, "warren.events.alice.>")
		sub, err := alice.nc.SubscribeSync(messages.EventSubject("alice.b1", "t1"))
		require.NoError(t, err)
		require.NoError(t, alice.nc.Flush())
		require.NoError(t, worker.nc.Publish(messages.EventSubject("alice.b1", "t1"), []byte("ev")))
		m, err := sub.NextMsg(5 * time.Second)
		require.NoError(t, err, "the owner receives its events from the fleet")
		require.Equal(t, "ev", string(m.Data))
	})
	t.Run("cancel another tenant's batch", func(t *testing.T) {
		key := messages.CancelKey("alice.b1", 1, "")
		require.NoError(t, bob.nc.Publish("$WJS.API.$KV."+aliceNS.Cancel()+"."+key, []byte(`{}`)))
		bob.refused(t, "$KV.warren_cancel_alice")
		kv, err := alice.js.KeyValue(ctx10(t), aliceNS.Cancel())
		require.NoError(t, err)
		_, err = kv.Put(ctx10(t), key, []byte(`{"reason":"mine"}`))
		require.NoError(t, err, "the owner cancels its batch")
		akv, err := admin.js.KeyValue(ctx10(t), aliceNS.Cancel())
		require.NoError(t, err)
		e, err := akv.Get(ctx10(t), key)
		require.NoError(t, err)
		require.Contains(t, string(e.Value()), "mine")
	})
	t.Run("publish a result", func(t *testing.T) {
		require.NoError(t, bob.nc.Publish(messages.ResultSubject("bob.b1", 1, "t1"), []byte(`{}`)))
		bob.refused(t, "warren.results.bob.b1.1.t1")
	})
	t.Run("a tenant reads the host registry", func(t *testing.T) {
		sc, err := scheduler.New(alice.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
		require.NoError(t, err)
		hs, err := sc.Hosts(ctx10(t))
		require.NoError(t, err)
		require.Len(t, hs, 1)
		require.Equal(t, "default.h1", hs[0].ID, "an entry without an id is named by its key")
	})
	t.Run("write the host registry", func(t *testing.T) {
		require.NoError(t, bob.nc.Publish("$WJS.API.$KV."+messages.BucketHosts+".h1", []byte(`{}`)))
		bob.refused(t, "$KV.warren_hosts.h1")
		require.NoError(t, bob.nc.Publish("$KV."+messages.BucketHosts+".h1", []byte(`{}`)))
		bob.refused(t, "$KV.warren_hosts.h1")
	})
	t.Run("consume tasks", func(t *testing.T) {
		next := "$WJS.API.CONSUMER.MSG.NEXT." + messages.StreamTasks + "." + messages.ConsumerName(messages.DefaultPool, messages.DefaultProfile)
		require.NoError(t, bob.nc.PublishRequest(next, bob.nc.NewInbox(), []byte(`{"batch":1}`)))
		bob.refused(t, next)
	})
	t.Run("publish as another tenant", func(t *testing.T) {
		require.NoError(t, bob.nc.Publish(taskSubj, []byte(`{"id":"t2"}`)))
		bob.refused(t, taskSubj)
	})
	t.Run("touch streams", func(t *testing.T) {
		for _, subj := range []string{"$WJS.API.STREAM.DELETE." + messages.StreamTasks, "$JS.API.STREAM.DELETE." + messages.StreamTasks, "$WJS.API.STREAM.INFO." + messages.StreamTasks} {
			require.NoError(t, bob.nc.PublishRequest(subj, bob.nc.NewInbox(), nil))
			bob.refused(t, subj)
		}
		_, err := broker.Apply(ctx10(t), admin.js, broker.StreamConfig{MaxAge: map[string]time.Duration{messages.StreamTasks: 6 * 24 * time.Hour}}, false)
		require.NoError(t, err, "the admin updates streams (warren setup)")
		s, err := admin.js.Stream(ctx10(t), messages.StreamTasks)
		require.NoError(t, err)
		require.Equal(t, 6*24*time.Hour, s.CachedInfo().Config.MaxAge)
	})
	t.Run("a worker publishes tasks", func(t *testing.T) {
		require.NoError(t, worker.nc.Publish(taskSubj, []byte(`{"id":"t3"}`)))
		worker.refused(t, taskSubj)
	})
	t.Run("reply subject aimed at another tenant's result", func(t *testing.T) {
		// In one shared account the server would deliver this PubAck (or a
		// direct get's stored message) to the reply subject, storing a
		// forged result. A tenant's replies stay in its own account.
		own := messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, "bob.b9")
		forged := messages.ResultSubject("alice.b1", 1, "t9")
		require.NoError(t, bob.nc.PublishRequest(own, forged, []byte(`{"id":"x"}`)))
		_, err := bob.js.Publish(ctx10(t), own, []byte(`{"id":"y"}`)) // ordered after the first
		require.NoError(t, err)
		s, err := admin.js.Stream(ctx10(t), aliceNS.Results())
		require.NoError(t, err)
		_, err = s.GetLastMsgForSubject(ctx10(t), forged)
		require.ErrorIs(t, err, jetstream.ErrMsgNotFound, "nothing landed on another tenant's result subject")
	})
}

func TestAuthConnectionRefusals(t *testing.T) {
	f := startAuthFleet(t)
	_, err := f.dial("", f.dir.State.TLS.CA)
	require.Error(t, err)
	require.ErrorContains(t, err, "Authorization Violation", "no creds: the server refuses the connection")
	require.ErrorContains(t, err, "pass --creds")

	other, err := broker.MakeTestCA(t.TempDir(), nil)
	require.NoError(t, err)
	_, err = f.dial("alice.creds", other.CA)
	require.Error(t, err)
	require.ErrorContains(t, err, "x509", "a certificate from another CA is refused")
	require.ErrorContains(t, err, "pass --tls-ca")

	c, err := f.dial("alice.creds", f.dir.State.TLS.CA)
	require.NoError(t, err, "control: the right creds and CA connect")
	c.nc.Close()
}

func TestAuthRevokeDisconnectsAndRefuses(t *testing.T) {
	f := startAuthFleet(t)
	closed := make(chan struct{})
	a, err := f.dial("alice.creds", f.dir.State.TLS.CA)
	require.NoError(t, err)
	a.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	b := f.as(t, "bob.creds")

	d, err := broker.OpenAuthDir(f.dir.Dir)
	require.NoError(t, err)
	require.NoError(t, d.Revoke("alice"))
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("the broker did not drop the revoked tenant's connection")
	}
	_, err = f.dial("alice.creds", f.dir.State.TLS.CA)
	require.ErrorContains(t, err, "Authorization Violation")
	require.True(t, b.nc.IsConnected(), "other tenants stay connected")
	_, err = b.js.Publish(ctx10(t), messages.TaskSubject("default", "default", "bob.b1"), []byte(`{}`))
	require.NoError(t, err)
	var st broker.AuthState
	data, err := os.ReadFile(filepath.Join(f.dir.Dir, broker.AuthStateFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &st))
	require.True(t, st.Principals[2].Revoked())
}

// TestTLSFromFiles: Config.TLS serves a user-supplied certificate; a client
// that trusts its CA connects, one that trusts another CA is refused.
func TestTLSFromFiles(t *testing.T) {
	files, err := broker.MakeTestCA(t.TempDir(), nil)
	require.NoError(t, err)
	srv, err := embedded.New(embedded.Config{DataDir: t.TempDir(), Port: -1, TLS: broker.TLSFiles{Cert: files.Cert, Key: files.Key}})
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx10(t)))
	t.Cleanup(srv.Stop)
	opts, _, err := broker.ClientAuth{TLSCA: files.CA}.Options()
	require.NoError(t, err)
	nc, err := broker.Connect(ctx10(t), srv.ClientURL(), "tls", opts...)
	require.NoError(t, err, "control: the server's CA")
	require.True(t, nc.TLSRequired())
	nc.Close()
	other, err := broker.MakeTestCA(t.TempDir(), nil)
	require.NoError(t, err)
	opts, _, err = broker.ClientAuth{TLSCA: other.CA}.Options()
	require.NoError(t, err)
	_, err = broker.Connect(ctx10(t), srv.ClientURL(), "tls", append(opts, nats.MaxReconnects(0))...)
	require.ErrorContains(t, err, "x509")
	_, err = embedded.New(embedded.Config{DataDir: t.TempDir(), TLS: broker.TLSFiles{Cert: files.Cert}})
	require.ErrorContains(t, err, "--tls-key")
}

// TestAuthWorkerConsumersConfinedToItsPool: a worker of pool gpu creates
// consumers on gpu's tasks and is refused one on the default pool's.
func TestAuthWorkerConsumersConfinedToItsPool(t *testing.T) {
	f := startAuthFleet(t)
	d, err := broker.OpenAuthDir(f.dir.Dir)
	require.NoError(t, err)
	reloads := f.srv.Reloads()
	_, err = d.AddWorker("gpu-workers", "gpu")
	require.NoError(t, err)
	require.NotEmpty(t, d.State.PoolXKeys["gpu"], "a new pool gets its curve key")
	// Connect once the broker has reloaded the directory, not during the
	// reload (embedded.Server.Reloads: an upstream data race otherwise).
	require.Eventually(t, func() bool { return f.srv.Reloads() > reloads }, 10*time.Second, 5*time.Millisecond, "the broker reloads the directory")
	gpu, err := f.dial("gpu-workers.creds", f.dir.State.TLS.CA)
	require.NoError(t, err, "new worker creds accepted after the reload")
	t.Cleanup(gpu.nc.Close)
	_, err = broker.EnsureConsumer(ctx10(t), gpu.js, "gpu", messages.DefaultProfile, broker.ConsumerConfig{})
	require.NoError(t, err, "control: its own pool")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, _ = broker.EnsureConsumer(ctx, gpu.js, messages.DefaultPool, "other", broker.ConsumerConfig{})
	}()
	gpu.refused(t, "$JS.API.CONSUMER.CREATE.WARREN_TASKS.warren_default_other.warren.tasks.default.other.>")
	_, err = d.AddWorker("gpu-workers", "gpu")
	require.ErrorContains(t, err, "already exists")
}

// TestAuthConfigRefusesAnotherTenantsImport: the tenant token is checked by
// the server itself when the configuration loads: an account edited to
// import another tenant's subjects is refused.
func TestAuthConfigRefusesAnotherTenantsImport(t *testing.T) {
	d, err := broker.InitAuthDir(t.TempDir(), broker.InitOptions{})
	require.NoError(t, err)
	for _, n := range []string{"alice", "bob"} {
		_, err := d.AddSubmitter(n)
		require.NoError(t, err)
	}
	conf := broker.ServerConfig(d.State)
	_, err = server.ProcessConfigFile(d.ServerConf())
	require.NoError(t, err, "control: the generated file loads")
	bob := conf[strings.Index(conf, `"bob" {`):]
	forged := strings.ReplaceAll(bob, `"warren.tasks.*.*.bob.>"`, `"warren.tasks.*.*.alice.>"`)
	require.NotEqual(t, bob, forged)
	path := filepath.Join(t.TempDir(), "forged.conf")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(conf, bob, forged, 1)), 0o600))
	_, err = server.ProcessConfigFile(path)
	require.ErrorContains(t, err, "service import not authorized")
}
