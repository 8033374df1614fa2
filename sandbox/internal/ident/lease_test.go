package ident

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUIDLeasesAreHostWide: two workers on one host (two pools with the
// same range and lock directory) never hand out the same uid; a uid comes
// back once released, a quarantined one never; a lease held by another
// process is skipped and freed by the kernel when that process dies. The
// control: pools without a lock directory both hand out the first uid.
func TestUIDLeasesAreHostWide(t *testing.T) {
	ok := func(uint32) error { return nil }
	c, d := NewPool(7000, 2, ""), NewPool(7000, 2, "")
	uc, err := c.Acquire()
	require.NoError(t, err)
	ud, err := d.Acquire()
	require.NoError(t, err)
	require.Equal(t, uc, ud, "control: without leases two pools collide")

	dir := t.TempDir()
	pool := func(base, count uint32) *Pool {
		return NewPool(base, count, dir)
	}
	a, b := pool(7000, 2), pool(7000, 2)
	ua, err := a.Acquire()
	require.NoError(t, err)
	ub, err := b.Acquire()
	require.NoError(t, err)
	require.NotEqual(t, ua, ub)
	_, err = b.Acquire()
	require.ErrorIs(t, err, ErrPoolExhausted, "the other uid is the first pool's")
	require.NoError(t, a.Release(ua, ok))
	got, err := b.Acquire()
	require.NoError(t, err)
	require.Equal(t, ua, got, "released: the lease is free for the other worker")
	require.Error(t, b.Release(got, func(uint32) error { return errors.New("teardown not verified") }))
	_, err = a.Acquire()
	require.ErrorIs(t, err, ErrPoolExhausted, "a quarantined uid keeps its lease")

	// Another process holds 7100's lease (util-linux flock); it dies.
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("util-linux flock is not installed: the cross-process half needs it")
	}
	holder := exec.Command("flock", "--no-fork", "-x", filepath.Join(dir, "7100"), "sleep", "600") // the holder is the process we kill
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	e := pool(7100, 1)
	require.Eventually(t, func() bool {
		if u, err := e.Acquire(); err == nil {
			require.NoError(t, e.Release(u, ok)) // flock not taken yet
			return false
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "the other process's lease is respected")
	require.NoError(t, holder.Process.Kill())
	_ = holder.Wait()
	u, err := e.Acquire()
	require.NoError(t, err, "the kernel freed the dead process's lease")
	require.Equal(t, uint32(7100), u)
}
