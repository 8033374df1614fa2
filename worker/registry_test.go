package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// hostEntry reads a host's registry entry; ok is false while it is absent.
func hostEntry(t *testing.T, b *brokertest.Broker, id string) (messages.HostInfo, bool) {
	t.Helper()
	kv, err := b.JS.KeyValue(context.Background(), messages.BucketHosts)
	require.NoError(t, err)
	var info messages.HostInfo
	e, err := kv.Get(context.Background(), id)
	if err != nil {
		return info, false
	}
	require.NoError(t, json.Unmarshal(e.Value(), &info))
	return info, true
}

// Free slots follow the tasks within a fraction of RegistryInterval (10s by
// default), and a draining host says so until its running task is done.
func TestRegistryTracksSlotsAndDraining(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	started := make(chan string, 1)
	w := startWorker(t, b, "host-d", workerOpts{capacity: 2, started: started})
	release := filepath.Join(t.TempDir(), "release")
	publish(t, b.JS, shTask("reg", "long", "while [ ! -e "+release+" ]; do sleep 0.05; done"))
	<-started

	// The default refresh interval is 10s; a slot change is seen well
	// before that.
	require.Eventually(t, func() bool {
		info, ok := hostEntry(t, b, "default.host-d")
		return ok && info.Free == 1 && !info.Draining
	}, 5*time.Second, 20*time.Millisecond, "the busy slot shows in the registry")

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- w.Stop(ctx)
	}()
	require.Eventually(t, func() bool {
		info, ok := hostEntry(t, b, "default.host-d")
		return ok && info.Draining
	}, 5*time.Second, 20*time.Millisecond, "a draining host is marked while its task runs")
	require.ErrorContains(t, w.Ready(), "draining")

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.NoError(t, <-stopped)
	_, ok := hostEntry(t, b, "default.host-d")
	require.False(t, ok, "a stopped host removes its entry")
	require.Equal(t, messages.StatusOK, collect(t, b.JS, "reg", 1, 5*time.Second)["long"].Status)
}
