//go:build !client

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
	"golang.org/x/sys/unix"
)

// TestEmbeddedBrokerFitsASmallDisk: on a data dir with 4 GiB of disk
// (nats-server gives JetStream 75% of it), a command's embedded broker
// sizes the streams to it and works. The control: the default limits on
// the same disk are refused as more than the server's storage.
func TestEmbeddedBrokerFitsASmallDisk(t *testing.T) {
	disk := tmpfsDisk(t, "4g")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r := runClientIn(t, ctx, "", filepath.Join(disk, "data"), "", "hosts")
	require.NoError(t, r.err, r.stderr)

	srv, err := embedded.New(embedded.Config{DataDir: filepath.Join(disk, "control"), DontListen: true})
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	require.Less(t, srv.StoreLimit(), broker.DefaultReservation(), "the disk is too small for the defaults, or this test shows nothing")
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	err = broker.Setup(ctx, js, broker.StreamConfig{})
	require.ErrorContains(t, err, "insufficient storage resources")
}

// TestEmbeddedBrokerRefusesATooSmallDisk: on a data dir whose disk cannot
// hold the streams and buckets even at their smallest, a command's
// embedded broker says so, with the disk it needs, before it creates any
// (rather than the server's "insufficient storage" halfway through).
func TestEmbeddedBrokerRefusesATooSmallDisk(t *testing.T) {
	disk := tmpfsDisk(t, "64m")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runClientIn(t, ctx, "", filepath.Join(disk, "data"), "", "hosts")
	require.Error(t, r.err)
	require.Regexp(t, `streams and buckets need at least [0-9.]+ MiB .*give the data dir at least [0-9.]+ MiB of free disk`, r.err.Error())
}

// tmpfsDisk is a directory on a tmpfs of size (mount's size= option),
// unmounted at the test's end.
func tmpfsDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root (CI runs as root)")
	}
	disk := t.TempDir()
	require.NoError(t, unix.Mount("tmpfs", disk, "tmpfs", 0, "size="+size))
	t.Cleanup(func() { _ = unix.Unmount(disk, unix.MNT_DETACH) })
	return disk
}
