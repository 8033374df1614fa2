package sandbox

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUIDPoolHandsOutDistinctUIDsAndReusesOnlyVerifiedOnes(t *testing.T) {
	p := newUIDPool(5000, 3)
	ok := func(uint32) error { return nil }
	a, err := p.acquire()
	require.NoError(t, err)
	b, err := p.acquire()
	require.NoError(t, err)
	c, err := p.acquire()
	require.NoError(t, err)
	require.ElementsMatch(t, []uint32{5000, 5001, 5002}, []uint32{a, b, c})
	_, err = p.acquire()
	require.ErrorIs(t, err, ErrUIDPoolExhausted)

	require.NoError(t, p.release(a, ok))
	got, err := p.acquire()
	require.NoError(t, err)
	require.Equal(t, a, got, "a verified uid is reused")

	leak := errors.New("process 123 still alive")
	require.ErrorIs(t, p.release(b, func(uint32) error { return leak }), leak)
	require.Contains(t, p.quarantinedUIDs(), b)
	require.NoError(t, p.release(c, ok))
	require.NoError(t, p.release(got, ok))
	seen := map[uint32]bool{}
	for range 2 {
		u, err := p.acquire()
		require.NoError(t, err)
		seen[u] = true
	}
	require.False(t, seen[b], "a quarantined uid is never handed out again")
	_, err = p.acquire()
	require.ErrorIs(t, err, ErrUIDPoolExhausted)
}

func TestSharedUIDPoolIsPerRange(t *testing.T) {
	require.Same(t, sharedUIDPool(7000, 10), sharedUIDPool(7000, 10))
	require.NotSame(t, sharedUIDPool(7000, 10), sharedUIDPool(8000, 10))
}

func TestProcessesOfUIDFindsALiveProcess(t *testing.T) {
	pids, err := processesOfUID(uint32(currentUID()))
	require.NoError(t, err)
	require.NotEmpty(t, pids, "control: this test process itself")
	pids, err = processesOfUID(4_000_000_123)
	require.NoError(t, err)
	require.Empty(t, pids)
}

func currentUID() int { return os.Getuid() }
