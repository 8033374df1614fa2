package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// TestFitStorage: the defaults stay on a large store; on a small one every
// limit shrinks by one factor into half the store, none below its floor,
// and the message says how to raise them.
func TestFitStorage(t *testing.T) {
	t.Parallel()
	total := broker.DefaultReservation()
	big := broker.FitStorage(4 * total)
	require.False(t, big.Scaled)
	require.Nil(t, big.MaxBytes)
	require.Equal(t, total, big.Reserved)
	require.False(t, broker.FitStorage(0).Scaled, "an unknown store keeps the defaults")

	store := int64(12 << 30) // a 16 GiB disk: nats-server takes 75% of it
	small := broker.FitStorage(store)
	require.True(t, small.Scaled)
	require.LessOrEqual(t, small.Reserved, store/2)
	require.Len(t, small.MaxBytes, len(broker.DefaultMaxBytes))
	require.Less(t, small.MaxBytes[messages.StreamTasks], broker.DefaultMaxBytes[messages.StreamTasks])
	require.GreaterOrEqual(t, small.MaxBytes[messages.StreamTasks], int64(1<<30), "tasks keep a useful share")
	require.Equal(t, broker.DefaultMaxBytes[messages.BucketTenants], small.MaxBytes[messages.BucketTenants], "a limit below the floor stays")
	require.Contains(t, small.String(), "warren setup --max-bytes")

	tiny := broker.FitStorage(64 << 20)
	for name, n := range tiny.MaxBytes {
		require.GreaterOrEqual(t, n, min(broker.DefaultMaxBytes[name], int64(16<<20)), name)
	}
}

// TestFitTooSmall: a store below the floors' sum is refused with the disk
// it needs; at the sum (and unknown) it is not.
func TestFitTooSmall(t *testing.T) {
	t.Parallel()
	why := broker.FitStorage(48 << 20).TooSmall()
	require.Contains(t, why, "the broker's JetStream storage is 48.0 MiB")
	require.Contains(t, why, "need at least 168.0 MiB")
	require.Empty(t, broker.FitStorage(broker.MinStorage()).TooSmall())
	require.Empty(t, broker.FitStorage(0).TooSmall())
}
