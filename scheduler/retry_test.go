package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/scheduler"
)

// TestRetryReportsTheOutageAndItsEnd: an operation the connected broker
// does not answer in time is retried; OnOutage hears of each try (the
// broker reachable) and, once it goes through, that the outage is over.
func TestRetryReportsTheOutageAndItsEnd(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := broker.Connect(ctx, b.URL, "retry-test")
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	var seen []scheduler.Outage
	c, err := scheduler.New(nc, scheduler.Config{RetryFor: time.Minute, OnOutage: func(o scheduler.Outage) { seen = append(seen, o) }})
	require.NoError(t, err)
	tries := 0
	v, err := scheduler.Retry(ctx, c, "publish", func() (int, error) {
		if tries++; tries < 3 {
			return 0, nats.ErrTimeout
		}
		return 7, nil
	})
	require.NoError(t, err)
	require.Equal(t, 7, v)
	require.Len(t, seen, 3)
	for _, o := range seen[:2] {
		require.True(t, o.Reachable)
		require.False(t, o.Over)
		require.ErrorIs(t, o.Err, nats.ErrTimeout)
	}
	require.True(t, seen[2].Over, "the outage's end is told")

	// The control: an operation that went through at once tells nothing.
	seen = nil
	_, err = scheduler.Retry(ctx, c, "publish", func() (int, error) { return 1, nil })
	require.NoError(t, err)
	require.Empty(t, seen)
}
