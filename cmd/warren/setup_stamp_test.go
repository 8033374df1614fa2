package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
)

// Against the broker recorded in the data dir, the first client command
// sets it up and stamps it; the next ones skip the setup (no lookup of a
// stream only the setup reads), until the stamp names another server or
// another resource table, or the command names its broker with --nats.
func TestSetupStampSkipsTheSetupOfTheRecordedServer(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	forget, err := writeBrokerRecord(dataDir, b.Server)
	require.NoError(t, err)
	t.Cleanup(forget)

	// Only the setup looks up the dead-letter stream.
	spy, err := nats.Connect(b.URL)
	require.NoError(t, err)
	t.Cleanup(spy.Close)
	// A synchronous subscription: what the server sent it before a
	// flush's PONG is queued when the flush returns.
	seen, err := spy.SubscribeSync("$JS.API.STREAM.INFO.WARREN_DLQ")
	require.NoError(t, err)
	require.NoError(t, spy.Flush())
	hosts := func(url string) int {
		t.Helper()
		r := runClientIn(t, ctx, url, dataDir, "", "hosts")
		require.NoError(t, r.err, r.stderr)
		require.NoError(t, spy.Flush())
		n, _, err := seen.Pending()
		require.NoError(t, err)
		for range n {
			_, err := seen.NextMsg(time.Second)
			require.NoError(t, err)
		}
		return n
	}

	require.EqualValues(t, 1, hosts(""), "the first command sets up")
	stamp := filepath.Join(dataDir, setupStampFile)
	require.FileExists(t, stamp)
	require.EqualValues(t, 0, hosts(""), "the next one skips it")

	for name, st := range map[string]setupStamp{
		"another server":         {ServerID: "NOTTHISONE", Digest: broker.SetupDigest()},
		"another resource table": {ServerID: b.Server.ID(), Digest: "older"},
	} {
		data, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(stamp, data, 0o600))
		require.EqualValues(t, 1, hosts(""), "a stamp of %s: set up again", name)
		require.EqualValues(t, 0, hosts(""), "and stamped again")
	}
	require.EqualValues(t, 1, hosts(b.URL), "--nats: always set up")
}
