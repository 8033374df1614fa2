package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// On a 3-node cluster Setup creates everything at R3 (min(3, cluster size)
// read from the server's INFO), and an operator's change of replicas
// survives every later Setup and a worker start.
func TestSetupOnClusterUsesThreeReplicasAndKeepsOperatorReplicas(t *testing.T) {
	c := brokertest.StartCluster(t, 3)
	_, js := c.Dial(t, "setup")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.Equal(t, 3, broker.ClusterSize(js))
	require.NoError(t, broker.Setup(ctx, js, broker.StreamConfig{}))
	for _, name := range []string{messages.StreamTasks, messages.StreamResults, messages.StreamDLQ, "KV_" + messages.BucketHosts} {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		require.Equal(t, 3, s.CachedInfo().Config.Replicas, name)
	}
	// The operator scales RESULTS down, as `nats stream edit --replicas 1`.
	s, err := js.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.Replicas = 1
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, broker.Setup(ctx, js, broker.StreamConfig{}))
	nc, _ := c.DialNode(t, 1, "worker")
	fleetWorkers(t, []*nats.Conn{nc}, 1) // a worker start runs Setup too
	s, err = js.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	require.Equal(t, 1, s.CachedInfo().Config.Replicas)

	// `warren setup --replicas 3` scales it back, and says so.
	changes, err := broker.Apply(ctx, js, broker.StreamConfig{Replicas: 3}, false)
	require.NoError(t, err)
	require.Equal(t, []broker.Change{{Kind: "stream", Name: messages.StreamResults, Field: "num_replicas", Class: "tunable", Have: "1", Want: "3"}}, changes)
	s, err = js.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	require.Equal(t, 3, s.CachedInfo().Config.Replicas)
}
