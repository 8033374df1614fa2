// Package brokertest starts a real embedded broker for tests: no mocks.
package brokertest

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
)

// Broker is a running embedded broker with one client connection.
type Broker struct {
	Server *embedded.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	URL    string // TCP URL; other processes can connect
	Dir    string
}

// Options tune Start.
type Options struct {
	Dir     string // data dir; defaults to t.TempDir()
	Port    int    // defaults to a free port below the ephemeral range (FreePorts), so Restart can bind it again
	Streams broker.StreamConfig
	// MaxPayload is the server's max_payload; defaults to the broker's
	// (8 MiB). 1<<20 is a stock nats-server's.
	MaxPayload int32
	// NoSetup leaves the server without Warren's streams. Defaults to
	// false (Setup runs).
	NoSetup bool
	// Logger receives the broker's logs. Defaults to none.
	Logger zerolog.Logger
}

// Start runs an embedded broker listening on a free loopback port, sets up
// Warren's streams and stops everything in t.Cleanup.
func Start(t testing.TB, o Options) *Broker {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Port == 0 {
		o.Port = FreePorts(t, 1)[0]
	}
	srv, err := embedded.New(embedded.Config{DataDir: o.Dir, Port: o.Port, MaxPayload: o.MaxPayload, Logger: o.Logger})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	nc, err := broker.Connect(ctx, srv.ClientURL(), "brokertest")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	if !o.NoSetup {
		require.NoError(t, broker.Setup(ctx, js, o.Streams))
	}
	return &Broker{Server: srv, Conn: nc, JS: js, URL: srv.ClientURL(), Dir: o.Dir}
}

// Restart stops the server and starts a new one on the same port and
// store, as a broker restart does: connections made with broker.Connect
// reconnect by themselves. The new server is stopped in t.Cleanup.
func (b *Broker) Restart(t testing.TB, o Options) {
	t.Helper()
	b.Server.Stop()
	u, err := url.Parse(b.URL)
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	srv, err := embedded.New(embedded.Config{DataDir: b.Dir, Port: port, MaxPayload: o.MaxPayload, Logger: o.Logger})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	b.Server = srv
}

// Dial opens another client connection to b, closed in t.Cleanup.
func (b *Broker) Dial(t testing.TB, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return DialURL(t, b.URL, name)
}
