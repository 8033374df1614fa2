package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// secretExec runs `warren exec --secret API_TOKEN -- echo ok` with cmd's
// environment plus the secret; it returns stdout, stderr and exit code.
func secretExec(t *testing.T, cmd func(context.Context, ...string) *exec.Cmd, extra ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := cmd(ctx, append(append([]string{"exec"}, extra...), "--secret", "API_TOKEN", "--", "sh", "-c", `echo "tok=$API_TOKEN"`)...)
	c.Env = append(c.Env, "API_TOKEN=pin-secret-81c2")
	return runCmd(t, c)
}

// putRogueHost writes a registry entry of pool default publishing key, as
// anyone who may write the registry can; the returned func removes it.
func putRogueHost(t *testing.T, kv jetstream.KeyValue, id, key string) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now().UTC()
	data, err := json.Marshal(&messages.HostInfo{ID: id, Pool: "default", Capacity: 4, Free: 4, Profiles: []string{"default"},
		Isolation: []messages.Isolation{messages.IsolationNamespace}, SealKey: key, StartedAt: now, UpdatedAt: now})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "default."+id, data)
	require.NoError(t, err)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, kv.Delete(ctx, "default."+id))
	}
}

// requireSealRefused checks a refused exec --secret names what the user
// needs: the pool, the host, both fingerprints and the re-pin command.
func requireSealRefused(t *testing.T, stderr string, code int, host, pinned, found string) {
	t.Helper()
	require.NotZero(t, code, "exec --secret sealed to a key other than the pinned one")
	for _, want := range []string{`pool "default"`, `host "` + host + `"`, scheduler.KeyFingerprint(pinned), scheduler.KeyFingerprint(found),
		"warren keys pin --nats ", " --pool default " + found, "secrets_unavailable"} {
		require.Contains(t, stderr, want)
	}
}

// On an open bus anyone can put a host entry with a key of their own in
// the registry. A client pins the pool's key on first use; from then on
// such an entry makes exec --secret refuse (nothing published), and so
// does a key pinned by hand that the workers do not publish, until
// `warren keys pin` pins the right one.
func TestE2ESealKeyPinnedOnFirstUse(t *testing.T) {
	e := newE2E(t)
	dir := t.TempDir()
	pub, stderr, code := e.run(t, "keys", "init", "--dir", dir)
	require.Zero(t, code, stderr)
	real := strings.TrimSpace(pub)
	e.startWorker(t, 1, "--seal-key", filepath.Join(dir, "pool-default.xkey"))
	kv, err := e.b.JS.KeyValue(context.Background(), messages.BucketHosts)
	require.NoError(t, err)
	rogueDir := t.TempDir()
	out, stderr, code := e.run(t, "keys", "init", "--dir", rogueDir)
	require.Zero(t, code, stderr)
	rogue := strings.TrimSpace(out)

	out, stderr, code = secretExec(t, e.cmd)
	require.Zero(t, code, stderr)
	require.Equal(t, "tok=***\n", out)
	require.Contains(t, stderr, "pinned the seal key", "a first-use pin is said out loud")
	pins, err := os.ReadFile(filepath.Join(e.dataDir, scheduler.PinsFile))
	require.NoError(t, err)
	require.Contains(t, string(pins), real)
	require.Contains(t, string(pins), e.b.URL, "pinned for this broker")

	tasks := func() uint64 {
		s, err := e.b.JS.Stream(context.Background(), messages.StreamTasks)
		require.NoError(t, err)
		info, err := s.Info(context.Background())
		require.NoError(t, err)
		return info.State.Msgs
	}
	before := tasks()
	remove := putRogueHost(t, kv, "rogue-1", rogue)
	_, stderr, code = secretExec(t, e.cmd)
	requireSealRefused(t, stderr, code, "rogue-1", real, rogue)
	require.Equal(t, before, tasks(), "nothing published")
	remove()
	out, stderr, code = secretExec(t, e.cmd)
	require.Zero(t, code, "control: the stranger gone, the pinned key is the workers': %s", stderr)
	require.Equal(t, "tok=***\n", out)
	require.NotContains(t, stderr, "pinned the seal key", "pinned once")

	// A pin by hand the workers do not match is refused the same way;
	// pinning the pool's real key again is the way back.
	_, stderr, code = e.run(t, "keys", "pin", "--pool", "default", rogue)
	require.Zero(t, code, stderr)
	require.Contains(t, stderr, "replacing "+scheduler.KeyFingerprint(real))
	host := workerHost(t, kv)
	_, stderr, code = secretExec(t, e.cmd)
	requireSealRefused(t, stderr, code, host, rogue, real)
	require.Contains(t, stderr, "pinned explicitly")
	m := regexp.MustCompile(`warren (keys pin [^\n]*)`).FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	_, pinErr, code := e.run(t, strings.Fields(m[1])...) // the command the refusal printed, as given
	require.Zero(t, code, pinErr)
	require.Contains(t, pinErr, "replacing "+scheduler.KeyFingerprint(rogue))
	out, stderr, code = secretExec(t, e.cmd)
	require.Zero(t, code, stderr)
	require.Equal(t, "tok=***\n", out)

	// keys show --fingerprint prints what the refusal shows.
	fp, stderr, code := e.run(t, "keys", "show", "--fingerprint", "--dir", dir)
	require.Zero(t, code, stderr)
	require.Equal(t, scheduler.KeyFingerprint(real), strings.TrimSpace(fp))
}

// workerHost is the id of the one host in the registry.
func workerHost(t *testing.T, kv jetstream.KeyValue) string {
	t.Helper()
	keys, err := kv.ListKeys(context.Background())
	require.NoError(t, err)
	var ids []string
	for k := range keys.Keys() {
		ids = append(ids, k)
	}
	require.Len(t, ids, 1, "one worker registered")
	e, err := kv.Get(context.Background(), ids[0])
	require.NoError(t, err)
	var h messages.HostInfo
	require.NoError(t, json.NewDecoder(bytes.NewReader(e.Value())).Decode(&h))
	return h.ID
}
