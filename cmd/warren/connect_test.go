package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/broker/embedded"
)

// A client given no broker never dials whatever listens on 127.0.0.1:4222
// (on a shared host, someone else's broker): it uses its embedded one.
func TestClientWithoutNATSNeverDialsTheDefaultPort(t *testing.T) {
	var accepted atomic.Int32
	if l, err := net.Listen("tcp", "127.0.0.1:4222"); err == nil {
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				_ = c.Close()
			}
		}()
	} else {
		t.Logf("127.0.0.1:4222 is taken (%v): only the embedded path is checked", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	c := exec.CommandContext(ctx, os.Args[0], "hosts")
	c.Env = append(withoutEnv(os.Environ(), "WARREN_NATS_URL"), e2eMainEnv+"=1", "WARREN_DATA_DIR="+dataDir, "WARREN_LOG_LEVEL=debug")
	out, err := c.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "using an embedded one")
	require.Zero(t, accepted.Load(), "the client dialled 127.0.0.1:4222")
	require.DirExists(t, filepath.Join(dataDir, "jetstream"), "the embedded broker's store is in the data dir")
}

func withoutEnv(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Without --nats, a client uses the broker recorded in its data dir by a
// running `warren up`/`warren broker`, and only if it is that server.
func TestClientUsesTheRecordedBrokerOnly(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	forget, err := writeBrokerRecord(dataDir, b.Server)
	require.NoError(t, err)

	r := runClientIn(t, ctx, "", dataDir, tasksJSONL(3), "submit", "--batch", "rec", "--queue-unserved")
	require.NoError(t, r.err, r.stderr)
	e := &cliEnv{b: b, ctx: ctx}
	require.EqualValues(t, 3, e.taskCount(t, "rec"), "published to the recorded broker")

	// Another server now answers at the recorded address: refused.
	rec, err := readBrokerRecord(dataDir)
	require.NoError(t, err)
	rec.ServerID = "someone-else"
	writeRecord(t, dataDir, rec)
	r = runClientIn(t, ctx, "", dataDir, "", "hosts")
	require.ErrorContains(t, r.err, "is not the server answering at "+b.URL)

	// The recording process is gone: the record is stale and ignored.
	rec.PID = deadPID(t)
	writeRecord(t, dataDir, rec)
	r = runClientIn(t, ctx, "", dataDir, "", "hosts")
	require.NoError(t, r.err, r.stderr)

	// The broker removes its own record when it stops, no one else's.
	forget()
	require.FileExists(t, recordPath(dataDir), "a record of another server is kept")
	fresh, err := writeBrokerRecord(dataDir, b.Server)
	require.NoError(t, err)
	fresh()
	require.NoFileExists(t, recordPath(dataDir))
}

func writeRecord(t *testing.T, dataDir string, rec *brokerRecord) {
	t.Helper()
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(recordPath(dataDir), data, 0o600))
}

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	require.NoError(t, c.Run())
	return c.Process.Pid
}

func TestServerWithoutJetStreamSaysSo(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(ns.Shutdown)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runClient(t, ctx, ns.ClientURL(), "", "hosts")
	require.EqualError(t, r.err, "JetStream is not enabled on "+ns.ClientURL()+": start nats-server with -js")
}

// `warren up` and `warren broker` run their own broker: --nats would be
// ignored, so it is refused.
func TestUpAndBrokerRefuseNATS(t *testing.T) {
	for _, cmd := range []string{"up", "broker"} {
		t.Run(cmd, func(t *testing.T) {
			var out, errb strings.Builder
			ctx := context.Background()
			err := run(ctx, ctx, []string{cmd, "--nats", "nats://127.0.0.1:1", "--data-dir", t.TempDir()}, stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
			require.ErrorContains(t, err, "runs its own broker, so --nats (or WARREN_NATS_URL) \"nats://127.0.0.1:1\" would be ignored")
		})
	}
}

// A broker record is read from a file anyone with the data dir may have
// edited: whatever it holds, reading it returns a record with a URL or an
// error, never a panic or an empty target.
func FuzzReadBrokerRecord(f *testing.F) {
	f.Add([]byte(`{"url":"nats://127.0.0.1:4222","server_id":"NABC","pid":1,"started_at":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"url":""}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"url":"nats://x","pid":-5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(recordPath(dir), data, 0o600))
		rec, err := readBrokerRecord(dir)
		if err != nil {
			require.Nil(t, rec)
			return
		}
		require.NotNil(t, rec)
		require.NotEmpty(t, rec.URL)
		_ = rec.alive()
	})
}

// A worker given no broker (no --nats, no record in its data dir) does not
// go looking on 127.0.0.1:4222: it says how to name one.
func TestWorkerWithoutABrokerSaysHowToNameOne(t *testing.T) {
	t.Setenv("WARREN_NATS_URL", "")
	var out, errb strings.Builder
	ctx := context.Background()
	err := run(ctx, ctx, []string{"worker", "--data-dir", t.TempDir()}, stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	require.ErrorContains(t, err, "no broker to serve: pass --nats URL")
}

// Two commands with no broker to dial on one --data-dir (two `warren
// verify` from a script) would run two embedded brokers on one JetStream
// store: the second is refused before it publishes anything, and told
// what to do. `warren broker` on a held data dir is refused too.
func TestASecondEmbeddedBrokerOnADataDirIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	holder, err := embedded.New(embedded.Config{DataDir: dataDir, DontListen: true})
	require.NoError(t, err)
	require.NoError(t, holder.Start(ctx))
	t.Cleanup(holder.Stop)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hosts"}, "no broker is running for --data-dir " + dataDir + ", and another command's embedded broker holds it: run `warren up`"},
		{[]string{"broker", "--listen", "127.0.0.1:0"}, "stop the broker that holds --data-dir " + dataDir},
	} {
		c := exec.CommandContext(ctx, os.Args[0], tc.args...)
		c.Env = append(withoutEnv(os.Environ(), "WARREN_NATS_URL"), e2eMainEnv+"=1", "WARREN_DATA_DIR="+dataDir)
		out, err := c.CombinedOutput()
		require.Error(t, err, "%v: %s", tc.args, out)
		require.Contains(t, string(out), tc.want, tc.args)
		require.Contains(t, string(out), fmt.Sprintf("in use by another broker (pid %d,", os.Getpid()), tc.args)
		t.Logf("%v: %s", tc.args, out)
	}
	require.NoFileExists(t, filepath.Join(dataDir, brokerRecordFile), "the refused broker recorded nothing")
}
