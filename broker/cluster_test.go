package broker_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/worker"
)

// clusterTasks is the batch size of the cluster failure tests: 2,000,
// and 500 under the race detector (which slows the three in-process nodes
// several times over); -cluster-tasks sets it.
var clusterTasks = flag.Int("cluster-tasks", defaultClusterTasks(), "tasks per batch in the cluster failure tests")

func defaultClusterTasks() int {
	if raceEnabled {
		return 500
	}
	return 2000
}

// maxStall bounds the longest gap between two results stored while a node
// is down and back.
const maxStall = 15 * time.Second

// clusterFleet is a 3-node cluster with Warren's streams at R3 and three
// workers, worker i first connected to node i.
type clusterFleet struct {
	c       *brokertest.Cluster
	admin   *nats.Conn
	workers []*nats.Conn
}

func startClusterFleet(t testing.TB, capacity int) *clusterFleet {
	t.Helper()
	return startClusterFleetOn(t, capacity, trivialRunner{}, messages.IsolationNone)
}

// startClusterFleetOn is startClusterFleet with the workers' runner and
// the isolation it offers.
func startClusterFleetOn(t testing.TB, capacity int, runner worker.Runner, iso messages.Isolation) *clusterFleet {
	t.Helper()
	c := brokertest.StartCluster(t, 3)
	admin, js := c.Dial(t, "admin")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, broker.Setup(ctx, js, broker.StreamConfig{}))
	s, err := js.Stream(ctx, messages.StreamTasks)
	require.NoError(t, err)
	require.Equal(t, 3, s.CachedInfo().Config.Replicas)
	f := &clusterFleet{c: c, admin: admin}
	for i := range 3 {
		nc, _ := c.DialNode(t, i, "worker")
		f.workers = append(f.workers, nc)
	}
	fleetWorkersOn(t, f.workers, capacity, runner, iso)
	return f
}

// bounce kills the node pick names once a quarter of the batch is stored,
// keeps it down while another quarter is stored (results must keep coming
// without it) and restarts it; the rest of the batch runs while it
// catches up. A kill is a server shutdown without lame-duck mode: its
// clients and routes drop at once.
func (f *clusterFleet) bounce(t *testing.T, pick func() int) func(stored func() int) {
	return func(stored func() int) {
		waitStored(t, stored, *clusterTasks/4, 60*time.Second)
		i := pick()
		before := stored()
		t.Logf("killing node %s at %d results", f.c.Name(i), before)
		f.c.Kill(i)
		waitStored(t, stored, before+*clusterTasks/4, 30*time.Second)
		t.Logf("restarting node %s at %d results", f.c.Name(i), stored())
		f.c.Restart(i)
	}
}

func TestClusterSurvivesNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster failure tests take about a minute each")
	}
	for _, tc := range []struct {
		name string
		pick func(f *clusterFleet) int
	}{
		{"tasks leader", func(f *clusterFleet) int { return f.c.StreamLeader(js(t, f.admin), messages.StreamTasks) }},
		{"results leader", func(f *clusterFleet) int { return f.c.StreamLeader(js(t, f.admin), messages.StreamResults) }},
		{"a worker's node", func(f *clusterFleet) int { return f.c.Index(f.workers[0].ConnectedServerName()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startClusterFleet(t, 4)
			run := runBatch(t, f.admin, "kill", *clusterTasks, 3*time.Minute, f.bounce(t, func() int { return tc.pick(f) }))
			logRun(t, tc.name, run)
			require.Less(t, run.MaxStall, maxStall)
		})
	}
}

func TestClusterRollingRestartLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster failure tests take about a minute each")
	}
	f := startClusterFleet(t, 4)
	run := runBatch(t, f.admin, "roll", *clusterTasks, 3*time.Minute, func(stored func() int) {
		step := *clusterTasks / 5
		for i := range 3 {
			waitStored(t, stored, (i+1)*step, 60*time.Second)
			t.Logf("restarting node %s at %d results", f.c.Name(i), stored())
			f.c.Kill(i)
			f.c.Restart(i)
			f.c.WaitReady()
		}
	})
	logRun(t, "rolling restart", run)
	require.Less(t, run.MaxStall, maxStall)
}
