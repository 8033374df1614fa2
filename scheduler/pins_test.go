package scheduler_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// curveKey is a fresh pool public key.
func curveKey(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateCurveKeys()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	return pub
}

// putHost writes a host registry entry of pool default with seal key key
// (as a worker, or anyone who may write the registry, does).
func (x *bundle) putHost(t *testing.T, id, key string) {
	t.Helper()
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketHosts)
	require.NoError(t, err)
	now := time.Now().UTC()
	data, err := json.Marshal(&messages.HostInfo{ID: id, Pool: "default", Capacity: 1, Profiles: []string{"default"}, SealKey: key, StartedAt: now, UpdatedAt: now})
	require.NoError(t, err)
	_, err = kv.Put(x.ctx, "default."+id, data)
	require.NoError(t, err)
}

func (x *bundle) deleteHost(t *testing.T, id string) {
	t.Helper()
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketHosts)
	require.NoError(t, err)
	require.NoError(t, kv.Delete(x.ctx, "default."+id))
}

// A pool's seal key is trusted on first use and pinned; a host that then
// publishes another key (a stranger's registry entry, or a rotation) makes
// every seal refuse, naming the pool, the host and both fingerprints, until
// the new key is pinned explicitly. Pins are per broker.
func TestPinnedPoolKeysRefuseAChangedKey(t *testing.T) {
	x := setup(t)
	path := filepath.Join(t.TempDir(), "data", scheduler.PinsFile)
	var firstUse []string
	keys := scheduler.PinnedPoolKeys{Client: x.c, Pins: scheduler.PinFile{Path: path, Broker: "nats://b1"}, Broker: "nats://b1",
		OnFirstUse: func(pool string, pin scheduler.Pin) { firstUse = append(firstUse, pool+"="+pin.Key) }}
	real, rogue := curveKey(t), curveKey(t)

	_, err := keys.PoolKey(x.ctx, "default")
	require.ErrorContains(t, err, "no live host", "nothing to pin yet")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing pinned")

	x.putHost(t, "h1", real)
	key, err := keys.PoolKey(x.ctx, "default")
	require.NoError(t, err)
	require.Equal(t, real, key)
	require.Equal(t, []string{"default=" + real}, firstUse, "pinned on first use, and said")
	key, err = keys.PoolKey(x.ctx, "default")
	require.NoError(t, err)
	require.Equal(t, real, key)
	require.Len(t, firstUse, 1, "pinned once")

	// A stranger's entry beside the real one, and alone.
	for _, alone := range []bool{false, true} {
		x.putHost(t, "rogue", rogue)
		if alone {
			x.deleteHost(t, "h1")
		}
		_, err = keys.PoolKey(x.ctx, "default")
		var mismatch *scheduler.SealKeyMismatchError
		require.ErrorAs(t, err, &mismatch, "alone=%v", alone)
		require.ErrorIs(t, err, messages.ErrSecretsUnavailable)
		require.Equal(t, "rogue", mismatch.Host)
		for _, want := range []string{`pool "default"`, "nats://b1", `host "rogue"`, scheduler.KeyFingerprint(real),
			scheduler.KeyFingerprint(rogue), "pinned on first use", "warren keys pin --pool default " + rogue} {
			require.Contains(t, err.Error(), want)
		}
		// Control: the stranger gone, the real key again.
		x.deleteHost(t, "rogue")
		x.putHost(t, "h1", real)
		key, err = keys.PoolKey(x.ctx, "default")
		require.NoError(t, err)
		require.Equal(t, real, key)
	}

	// Another broker's pool of the same name is another pool.
	other := keys
	other.Pins, other.Broker = scheduler.PinFile{Path: path, Broker: "nats://b2"}, "nats://b2"
	x.putHost(t, "h1", rogue)
	key, err = other.PoolKey(x.ctx, "default")
	require.NoError(t, err)
	require.Equal(t, rogue, key)

	// A legitimate rotation: refused until pinned explicitly.
	_, err = keys.PoolKey(x.ctx, "default")
	require.ErrorAs(t, err, new(*scheduler.SealKeyMismatchError))
	old, had, err := scheduler.PinFile{Path: path, Broker: "nats://b1"}.Set("default", rogue)
	require.NoError(t, err)
	require.True(t, had)
	require.Equal(t, real, old.Key)
	key, err = keys.PoolKey(x.ctx, "default")
	require.NoError(t, err)
	require.Equal(t, rogue, key)
	x.putHost(t, "h1", real)
	_, err = keys.PoolKey(x.ctx, "default")
	require.ErrorContains(t, err, "pinned explicitly", "an explicit pin is held to the same rule")
}

// Publish with a changed key: the batch is refused per line with the
// typed error, and nothing is published.
func TestPublishRefusesAKeyOtherThanThePinned(t *testing.T) {
	x := setup(t)
	pins := scheduler.PinFile{Path: filepath.Join(t.TempDir(), scheduler.PinsFile), Broker: "nats://b1"}
	pinned, rogue := curveKey(t), curveKey(t)
	_, _, err := pins.Set("default", pinned)
	require.NoError(t, err)
	x.putHost(t, "rogue", rogue)
	c, err := scheduler.New(x.b.Conn, scheduler.Config{PoolKeys: scheduler.PinnedPoolKeys{Client: x.c, Pins: pins, Broker: "nats://b1"}})
	require.NoError(t, err)
	b, err := scheduler.ReadBatch(strings.NewReader(`{"id":"a","kind":"exec","argv":["true"],"secrets":{"TOKEN":"v"}}`+"\n"), scheduler.BatchOptions{Batch: "pinned"})
	require.NoError(t, err)
	_, err = c.Publish(x.ctx, b)
	var mismatch *scheduler.SealKeyMismatchError
	require.ErrorAs(t, err, &mismatch)
	require.ErrorIs(t, err, messages.ErrSecretsUnavailable)
	require.Contains(t, err.Error(), "line 1: ")
	require.Empty(t, x.storedTasks(t, "pinned"))

	x.putHost(t, "rogue", pinned) // control: the pinned key published
	_, err = c.Publish(x.ctx, b)
	require.NoError(t, err)
	require.Len(t, x.storedTasks(t, "pinned"), 1)
}

// A damaged pins file is refused with the full path of the bad field.
func TestPinFileNamesTheBadField(t *testing.T) {
	good := curveKey(t)
	for _, tc := range []struct{ doc, want string }{
		{`{"v":2,"brokers":{}}`, "v: 2 is not 1"},
		{`{"v":1,"brokers":{"nats://b":{"default":{"key":"Xnope","source":"first_use"}}}}`, `brokers["nats://b"]["default"].key: "Xnope" is not a public curve key`},
		{`{"v":1,"brokers":{"nats://b":{"default":{"key":"` + good + `","source":"guess"}}}}`, `brokers["nats://b"]["default"].source: "guess" is not first_use or explicit`},
		{`{"v":1,"brokers":{"nats://b":{"Bad.Pool":{"key":"` + good + `","source":"explicit"}}}}`, `brokers["nats://b"]["Bad.Pool"]: pool name`},
		{`{"v":1,"brokers":{},"extra":1}`, `unknown field "extra"`},
	} {
		path := filepath.Join(t.TempDir(), scheduler.PinsFile)
		require.NoError(t, os.WriteFile(path, []byte(tc.doc), 0o600))
		_, _, err := scheduler.PinFile{Path: path, Broker: "nats://b"}.Pinned("default")
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, path)
	}
	// Control: a good file reads.
	path := filepath.Join(t.TempDir(), scheduler.PinsFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"v":1,"brokers":{"nats://b":{"default":{"key":"`+good+`","source":"explicit"}}}}`), 0o600))
	pin, ok, err := scheduler.PinFile{Path: path, Broker: "nats://b"}.Pinned("default")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, good, pin.Key)
}
