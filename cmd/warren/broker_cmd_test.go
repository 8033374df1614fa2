//go:build !client

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
)

func TestBrokerClusterFlags(t *testing.T) {
	for _, tc := range []struct {
		f   brokerFlags
		err string
	}{
		{brokerFlags{}, ""},
		{brokerFlags{Routes: []string{"nats-route://a:6222"}}, "--routes needs --cluster"},
		{brokerFlags{Cluster: "w", Routes: []string{"nats-route://a:6222"}, ClusterListen: "0.0.0.0:6222"}, "--cluster needs --name"},
		{brokerFlags{Cluster: "w", Name: "b1", ClusterListen: "0.0.0.0:6222"}, "--cluster needs --routes"},
		{brokerFlags{Cluster: "w", Name: "b1", Routes: []string{"nats-route://a:6222"}, ClusterListen: "nowhere"}, "--cluster-listen"},
	} {
		cl, err := tc.f.cluster()
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Nil(t, cl)
	}
}

// Three `warren broker --cluster` nodes form a JetStream cluster, and
// `warren setup` against it creates every stream at R3.
func TestBrokerNodesFormACluster(t *testing.T) {
	clientPorts, routePorts := brokertest.FreePorts(t, 3), brokertest.FreePorts(t, 3)
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		f := brokerFlags{Listen: fmt.Sprintf("127.0.0.1:%d", clientPorts[i]), Name: fmt.Sprintf("b%d", i+1), Cluster: "warren",
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", routePorts[i]), Routes: routes}
		g := &globals{Ctx: ctx, DataDir: t.TempDir(), Log: zerolog.Nop()}
		wg.Go(func() {
			srv, err := f.startServer(g)
			errs[i] = err
			if err == nil {
				t.Cleanup(srv.Stop)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	url := strings.Join(urls, ",")
	_, js := brokertest.DialURL(t, url, "test")
	brokertest.WaitJetStream(t, js)
	out := runClient(t, ctx, url, "", "setup")
	require.NoError(t, out.err)
	require.Contains(t, out.stdout, "stream WARREN_TASKS: create (")
	require.Contains(t, out.stdout, "num_replicas=3")
	require.NotContains(t, out.stdout, "num_replicas=1")
	require.NoError(t, broker.Setup(ctx, js, broker.StreamConfig{}))
}

// A broker whose store holds incompatible streams still serves, so that
// `warren setup --nats` can fix them.
func TestBrokerServesIncompatibleStreamsForSetup(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	port := brokertest.FreePorts(t, 1)[0]
	f := brokerFlags{Listen: fmt.Sprintf("127.0.0.1:%d", port)}
	g := &globals{Ctx: ctx, DataDir: dir, Log: zerolog.Nop()}
	srv, err := f.startServer(g)
	require.NoError(t, err)
	url := srv.ClientURL()
	_, js := brokertest.DialURL(t, url, "edit")
	editStream(t, js, "WARREN_RESULTS", func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 2 })
	srv.Stop()

	srv, err = f.startServer(g)
	require.NoError(t, err, "served despite the incompatible stream")
	t.Cleanup(srv.Stop)
	require.ErrorContains(t, runClient(t, ctx, url, "", "hosts").err, "max_msgs_per_subject")
	fix := runClient(t, ctx, url, "", "setup")
	require.NoError(t, fix.err)
	require.Equal(t, "stream WARREN_RESULTS: max_msgs_per_subject 2 -> 1\n", fix.stdout)
	require.NoError(t, runClient(t, ctx, url, "", "hosts").err)
}

// A stop that arrives while the broker starts is a stop: exit 0, nothing
// printed. A service manager stopping a broker it has just started (or a
// Ctrl-C during start) must not read it as a failure.
func TestBrokerStoppedWhileStartingExitsCleanly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb strings.Builder
	port := brokertest.FreePorts(t, 1)[0]
	err := run(ctx, ctx, []string{"broker", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", t.TempDir()}, stdio{Out: &out, Err: &errb})
	require.NoError(t, err, errb.String())
}
