//go:build !client

package main

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// countingLink is a host's link to a test broker that counts opens and
// closes.
type countingLink struct {
	nc            *nats.Conn
	opens, closes int
}

func (l *countingLink) open(context.Context) (*nats.Conn, error) { l.opens++; return l.nc, nil }
func (l *countingLink) close()                                   { l.closes++ }

func testHostFlags(t *testing.T) workerFlags {
	f := workerFlags{Pool: messages.DefaultPool, Profiles: []string{messages.DefaultProfile}, Capacity: 1,
		Isolation: "none", InsecureNoIsolation: true, HostID: "host-test", pullWait: 100 * time.Millisecond}
	f.ScratchRoot = t.TempDir()
	return f
}

// hostEntries counts the hosts registered in the registry.
func hostEntries(t *testing.T, br *brokertest.Broker) int {
	kv, err := br.JS.KeyValue(context.Background(), messages.BucketHosts)
	require.NoError(t, err)
	keys, err := kv.ListKeys(context.Background())
	require.NoError(t, err)
	n := 0
	for range keys.Keys() {
		n++
	}
	return n
}

// TestHostLifecycle: Start brings the worker up (registered); Stop takes
// everything down once however often it is called, and the link is closed
// exactly once; a stopped host does not start again.
func TestHostLifecycle(t *testing.T) {
	br := brokertest.Start(t, brokertest.Options{})
	nc, _ := br.Dial(t, "host-test")
	link := &countingLink{nc: nc}
	h, err := newHost(&globals{Log: zerolog.Nop()}, testHostFlags(t), link)
	require.NoError(t, err)
	require.Zero(t, link.opens, "newHost starts nothing")

	require.NoError(t, h.Start(t.Context()))
	require.Equal(t, 1, link.opens)
	require.Equal(t, 1, hostEntries(t, br), "the worker serves and registered")
	require.Error(t, h.Start(t.Context()), "a second Start is refused")

	require.NoError(t, h.Stop(t.Context()))
	require.NoError(t, h.Stop(t.Context()))
	require.Equal(t, 1, link.closes)
	require.Zero(t, hostEntries(t, br), "the worker deregistered")
	require.Error(t, h.Start(t.Context()))
	require.Equal(t, 1, link.opens)
}

// TestHostStopBeforeStart: nothing was started, nothing is closed, and
// Start is refused afterwards.
func TestHostStopBeforeStart(t *testing.T) {
	link := &countingLink{}
	h, err := newHost(&globals{Log: zerolog.Nop()}, testHostFlags(t), link)
	require.NoError(t, err)
	require.NoError(t, h.Stop(t.Context()))
	require.Error(t, h.Start(t.Context()))
	require.Zero(t, link.opens)
	require.Zero(t, link.closes)
}

// TestHostFailedStartStopsWhatStarted: a part failing half way (the
// metrics address is taken) leaves nothing running: the link that was
// opened is closed, no worker registered, and Stop has nothing left to do.
func TestHostFailedStartStopsWhatStarted(t *testing.T) {
	br := brokertest.Start(t, brokertest.Options{})
	nc, _ := br.Dial(t, "host-test")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	f := testHostFlags(t)
	f.MetricsListen = taken.Addr().String()
	link := &countingLink{nc: nc}
	h, err := newHost(&globals{Log: zerolog.Nop()}, f, link)
	require.NoError(t, err)
	require.ErrorContains(t, h.Start(t.Context()), "--metrics-listen")
	require.Equal(t, 1, link.opens)
	require.Equal(t, 1, link.closes, "Start closed what it had opened")
	require.Zero(t, hostEntries(t, br))
	require.NoError(t, h.Stop(t.Context()))
	require.Equal(t, 1, link.closes)
}

// TestHostRefusesNoIsolationWithoutInsecure: checked by newHost, before
// anything runs.
func TestHostRefusesNoIsolationWithoutInsecure(t *testing.T) {
	f := testHostFlags(t)
	f.InsecureNoIsolation = false
	link := &countingLink{}
	_, err := newHost(&globals{Log: zerolog.Nop()}, f, link)
	require.ErrorContains(t, err, "--insecure-no-isolation")
	require.Zero(t, link.opens)
}

// TestHostUnixSocketProfilesNeedAMountNamespace: --unix-socket-profile
// over Landlock-only isolation would reopen the host's pathname sockets, so
// the host refuses to start, naming the flag; over this host's default
// (namespaces) the same flag starts (the control).
func TestHostUnixSocketProfilesNeedAMountNamespace(t *testing.T) {
	br := brokertest.Start(t, brokertest.Options{})
	for _, c := range []struct {
		iso    string
		refuse bool
	}{{"landlock", true}, {"auto", false}} {
		t.Run(c.iso, func(t *testing.T) {
			nc, _ := br.Dial(t, "host-"+c.iso)
			f := testHostFlags(t)
			f.Isolation, f.InsecureNoIsolation, f.HostID = c.iso, false, "host-"+c.iso
			f.UnixSocketProfiles = []string{messages.DefaultProfile}
			root, err := os.MkdirTemp("", "warren-host-unix-")
			require.NoError(t, err)
			require.NoError(t, os.Chmod(root, 0o711)) // sandbox uids reach their scratch
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			f.ScratchRoot = root
			h, err := newHost(&globals{Log: zerolog.Nop()}, f, &countingLink{nc: nc})
			require.NoError(t, err)
			t.Cleanup(func() { _ = h.Stop(context.Background()) })
			err = h.Start(t.Context())
			if c.refuse {
				require.ErrorContains(t, err, "--unix-socket-profile needs a mount namespace")
				return
			}
			require.NoError(t, err)
		})
	}
}
