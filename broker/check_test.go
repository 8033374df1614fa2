package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

func statusOf(t *testing.T, sts []broker.ResourceStatus, name string) broker.ResourceStatus {
	t.Helper()
	for _, s := range sts {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status for %s", name)
	return broker.ResourceStatus{}
}

// Check reports missing, compatible and incompatible resources and changes
// nothing.
func TestCheckReportsWithoutChanging(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{NoSetup: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sts, err := broker.Check(ctx, b.JS, broker.StreamConfig{})
	require.NoError(t, err)
	require.True(t, statusOf(t, sts, messages.StreamTasks).Missing)
	missing, err := broker.Missing(ctx, b.JS)
	require.NoError(t, err)
	require.Contains(t, missing, messages.StreamTasks, "Check created nothing")

	require.NoError(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))
	s, err := b.JS.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgsPerSubject = 2 // an operator's edit that breaks one result per attempt
	cfg.MaxAge = 48 * time.Hour
	_, err = b.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	sts, err = broker.Check(ctx, b.JS, broker.StreamConfig{})
	require.NoError(t, err)
	res := statusOf(t, sts, messages.StreamResults)
	require.False(t, res.Missing)
	require.Len(t, res.Incompatible, 1)
	require.Equal(t, "max_msgs_per_subject", res.Incompatible[0].Field)
	require.Len(t, res.Tunables, 1)
	require.Equal(t, "max_age", res.Tunables[0].Field)
	tasks := statusOf(t, sts, messages.StreamTasks)
	require.Empty(t, tasks.Incompatible)
	require.Equal(t, 1, tasks.Replicas)

	s, err = b.JS.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	require.EqualValues(t, 2, s.CachedInfo().Config.MaxMsgsPerSubject, "Check changed nothing")
}
