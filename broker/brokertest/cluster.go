package brokertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/embedded"
)

// Cluster is a JetStream cluster of embedded brokers on loopback, each with
// a file store in its own temporary directory. Nodes can be killed and
// restarted on the same ports and store, as a real node would be.
type Cluster struct {
	t     testing.TB
	mu    sync.Mutex
	nodes []*node
}

type node struct {
	cfg embedded.Config
	url string
	srv *embedded.Server // nil while down
}

// StartCluster runs n clustered brokers and waits until JetStream has a
// meta leader. Everything is stopped in t.Cleanup.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	clientPorts, routePorts := FreePorts(t, n), FreePorts(t, n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i])
	}
	c := &Cluster{t: t}
	for i := range n {
		c.nodes = append(c.nodes, &node{
			url: fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]),
			cfg: embedded.Config{
				DataDir: t.TempDir(),
				Name:    fmt.Sprintf("n%d", i+1),
				Port:    clientPorts[i],
				Cluster: &embedded.ClusterConfig{Name: "warren-test", Port: routePorts[i], Routes: routes},
				// As long as start's context: a restarted node recovers its
				// store before it is ready, which under the race detector on
				// a loaded small machine can take longer than the 10s default.
				ReadyTimeout: 30 * time.Second,
			},
		})
	}
	t.Cleanup(func() {
		c.settle()
		for i := range c.nodes {
			c.Kill(i)
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n { // together: a node waits for its peers' routes
		wg.Go(func() { errs[i] = c.start(i) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	c.WaitReady()
	return c
}

// FreePorts finds n free TCP ports on loopback, held open until all are
// found so none is handed out twice. They lie below the kernel's ephemeral
// range (net.ipv4.ip_local_port_range): a port picked from it is free only
// until any process's next outgoing connection takes it as its source
// port, and then the server that was to bind it cannot (a cluster node
// "not ready" at start, or on its restart on the same port).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	lo, hi := fixedPortRange()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		require.Less(t, tries, 1000, "no free loopback port in [%d, %d)", lo, hi)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo)))
		if err != nil {
			continue // taken
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// fixedPortRange is where FreePorts picks: from 10000 up to the start of
// the ephemeral range (32768 by default).
func fixedPortRange() (lo, hi int) {
	lo, hi = 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if start, err := strconv.Atoi(f[0]); err == nil && start > lo+1000 {
				hi = start
			}
		}
	}
	return lo, hi
}

func (c *Cluster) start(i int) error {
	srv, err := embedded.New(c.nodes[i].cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.nodes[i].srv = srv
	c.mu.Unlock()
	return nil
}

// settleFor bounds settle: past it the cluster is stopped as it is.
const settleFor = 15 * time.Second

// settle waits, up to settleFor, until every stream and consumer of the
// cluster has a leader, no reconfiguration under way, and each replica on
// a running node current, so that the shutdown finds no assignment being
// applied. nats-server (2.15.2) leaks the write-ahead log of a Raft group
// it creates while it shuts down: Shutdown stops its system account before
// JetStream, and a stream or consumer assignment applied in between (a
// scale-up or a new durable still reaching a replica) opens the group's
// file store, then fails to start its node (no system account) without
// closing the store, whose goroutines outlive the server (goleak, under
// load, after a test that ended right after such a change).
func (c *Cluster) settle() {
	c.mu.Lock()
	var up []string
	for _, n := range c.nodes {
		if n.srv != nil {
			up = append(up, n.url)
		}
	}
	c.mu.Unlock()
	if len(up) == 0 {
		return
	}
	nc, err := nats.Connect(strings.Join(up, ","), nats.Name("brokertest-settle"))
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	for end := time.Now().Add(settleFor); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if settled(js) {
			return
		}
	}
	c.t.Logf("brokertest: the cluster did not settle within %s; stopping it as it is", settleFor)
}

// settled reports whether every stream and consumer's group is at rest.
func settled(js jetstream.JetStream) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	streams := js.ListStreams(ctx)
	for info := range streams.Info() {
		if !atRest(info.Cluster) {
			return false
		}
		s, err := js.Stream(ctx, info.Config.Name)
		if err != nil {
			return false
		}
		consumers := s.ListConsumers(ctx)
		for ci := range consumers.Info() {
			if !atRest(ci.Cluster) {
				return false
			}
		}
		if consumers.Err() != nil {
			return false
		}
	}
	return streams.Err() == nil
}

// atRest: a leader, no reconfiguration, and every replica not offline
// current (a node a test left down is offline, not waited for).
func atRest(ci *jetstream.ClusterInfo) bool {
	if ci == nil {
		return true
	}
	if ci.Leader == "" || ci.Desired != nil {
		return false
	}
	for _, r := range ci.Replicas {
		if !r.Offline && (!r.Current || r.Pending) {
			return false
		}
	}
	return true
}

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.nodes) }

// URL lists every node's client URL, comma separated, for nats.Connect.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.url
	}
	return strings.Join(urls, ",")
}

// NodeURL is node i's client URL.
func (c *Cluster) NodeURL(i int) string { return c.nodes[i].url }

// Name is node i's server name (as stream cluster info names leaders).
func (c *Cluster) Name(i int) string { return c.nodes[i].cfg.Name }

// Index is the index of the node named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, n := range c.nodes {
		if n.cfg.Name == name {
			return i
		}
	}
	return -1
}

// Kill stops node i (no-op when it is down).
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	srv := c.nodes[i].srv
	c.nodes[i].srv = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// Restart starts node i again on its ports and store.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	require.NoError(c.t, c.start(i))
}

// WaitReady polls until the cluster's JetStream answers API requests (a
// meta leader is elected), for up to 30s.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	_, js := c.Dial(c.t, "brokertest-ready")
	WaitJetStream(c.t, js)
}

// WaitJetStream polls until JetStream answers js's API requests, for up
// to 30s. A clustered server answers nothing until a meta leader is
// elected, so each try has its own short timeout.
func WaitJetStream(t testing.TB, js jetstream.JetStream) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "JetStream has no meta leader")
}

// Dial connects to the cluster (any node, reconnecting to the others),
// closed in t.Cleanup.
func (c *Cluster) Dial(t testing.TB, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return DialURL(t, c.URL(), name)
}

// DialNode connects to node i only first (reconnects go to the others).
func (c *Cluster) DialNode(t testing.TB, i int, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return DialURL(t, c.nodes[i].url, name, nats.DontRandomize())
}

// DialURL connects to the broker(s) at url, closed in t.Cleanup.
func DialURL(t testing.TB, url, name string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := broker.Connect(context.Background(), url, name, opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

// StreamLeader is the index of the node leading stream, polling up to 30s
// for one to be elected.
func (c *Cluster) StreamLeader(js jetstream.JetStream, stream string) int {
	c.t.Helper()
	leader := -1
	require.Eventually(c.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, stream)
		if err != nil || s.CachedInfo().Cluster == nil {
			return false
		}
		leader = c.Index(s.CachedInfo().Cluster.Leader)
		return leader >= 0
	}, 30*time.Second, 100*time.Millisecond, "stream %s has no leader", stream)
	return leader
}
