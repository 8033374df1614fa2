package ident

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestUIDPoolHandsOutDistinctUIDsAndReusesOnlyVerifiedOnes(t *testing.T) {
	p := NewPool(5000, 3, "")
	ok := func(uint32) error { return nil }
	a, err := p.Acquire()
	require.NoError(t, err)
	b, err := p.Acquire()
	require.NoError(t, err)
	c, err := p.Acquire()
	require.NoError(t, err)
	require.ElementsMatch(t, []uint32{5000, 5001, 5002}, []uint32{a, b, c})
	_, err = p.Acquire()
	require.ErrorIs(t, err, ErrPoolExhausted)

	require.NoError(t, p.Release(a, ok))
	got, err := p.Acquire()
	require.NoError(t, err)
	require.Equal(t, a, got, "a verified uid is reused")

	leak := errors.New("process 123 still alive")
	require.ErrorIs(t, p.Release(b, func(uint32) error { return leak }), leak)
	require.Contains(t, p.Quarantined(), b)
	require.NoError(t, p.Release(c, ok))
	require.NoError(t, p.Release(got, ok))
	seen := map[uint32]bool{}
	for range 2 {
		u, err := p.Acquire()
		require.NoError(t, err)
		seen[u] = true
	}
	require.False(t, seen[b], "a quarantined uid is never handed out again")
	_, err = p.Acquire()
	require.ErrorIs(t, err, ErrPoolExhausted)
}

func TestSharedUIDPoolIsPerRange(t *testing.T) {
	require.Same(t, SharedPool(7000, 10), SharedPool(7000, 10))
	require.NotSame(t, SharedPool(7000, 10), SharedPool(8000, 10))
}

func TestLivePIDsOfUIDFindsALiveProcessNotAZombie(t *testing.T) {
	pids, err := LivePIDs(uint32(os.Getuid()))
	require.NoError(t, err)
	require.Contains(t, pids, os.Getpid(), "control: this test process itself")
	pids, err = LivePIDs(4_000_000_123)
	require.NoError(t, err)
	require.Empty(t, pids)

	// A child that exited but is not reaped yet is a zombie: dead, not live.
	cmd := exec.Command("/bin/true")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		return err == nil && strings.Contains(string(b), ") Z ")
	}, 10*time.Second, time.Millisecond, "the child becomes a zombie")
	live, zombies, err := Processes(uint32(os.Getuid()))
	require.NoError(t, err)
	require.NotContains(t, live, cmd.Process.Pid)
	require.Contains(t, zombies, cmd.Process.Pid)
}
