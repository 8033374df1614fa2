package sandbox

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
	c, d := newUIDPool(7000, 2), newUIDPool(7000, 2)
	uc, err := c.acquire()
	require.NoError(t, err)
	ud, err := d.acquire()
	require.NoError(t, err)
	require.Equal(t, uc, ud, "control: without leases two pools collide")

	dir := t.TempDir()
	pool := func(base, count uint32) *uidPool {
		p := newUIDPool(base, count)
		p.lockDir = dir
		return p
	}
	a, b := pool(7000, 2), pool(7000, 2)
	ua, err := a.acquire()
	require.NoError(t, err)
	ub, err := b.acquire()
	require.NoError(t, err)
	require.NotEqual(t, ua, ub)
	_, err = b.acquire()
	require.ErrorIs(t, err, ErrUIDPoolExhausted, "the other uid is the first pool's")
	require.NoError(t, a.release(ua, ok))
	got, err := b.acquire()
	require.NoError(t, err)
	require.Equal(t, ua, got, "released: the lease is free for the other worker")
	require.Error(t, b.release(got, func(uint32) error { return errors.New("teardown not verified") }))
	_, err = a.acquire()
	require.ErrorIs(t, err, ErrUIDPoolExhausted, "a quarantined uid keeps its lease")

	// Another process holds 7100's lease (util-linux flock); it dies.
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("util-linux flock is not installed: the cross-process half needs it")
	}
	holder := exec.Command("flock", "--no-fork", "-x", filepath.Join(dir, "7100"), "sleep", "600") // the holder is the process we kill
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	e := pool(7100, 1)
	require.Eventually(t, func() bool {
		if u, err := e.acquire(); err == nil {
			require.NoError(t, e.release(u, ok)) // flock not taken yet
			return false
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "the other process's lease is respected")
	require.NoError(t, holder.Process.Kill())
	_ = holder.Wait()
	u, err := e.acquire()
	require.NoError(t, err, "the kernel freed the dead process's lease")
	require.Equal(t, uint32(7100), u)
}
