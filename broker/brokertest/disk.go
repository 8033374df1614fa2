package brokertest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"golang.org/x/sys/unix"
)

// SmallDisk mounts a tmpfs of size bytes on a new directory, for a data
// dir that can fill up, and unmounts it in t.Cleanup (registered first,
// so it runs after the cleanups of what is stored there). It needs root;
// without it the test is skipped (CI runs as root).
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)))
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// SmallStreams gives every stream and bucket a byte limit of each, so
// Warren's streams fit the JetStream storage a server on a SmallDisk has
// (three quarters of its free space).
func SmallStreams(each int64) broker.StreamConfig {
	limits := map[string]int64{}
	for name := range broker.DefaultMaxBytes {
		limits[name] = each
	}
	return broker.StreamConfig{MaxBytes: limits}
}

// Fill writes a file into dir until its filesystem is full and returns
// what frees the space again (also run in t.Cleanup).
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	require.True(t, errors.Is(err, unix.ENOSPC), "filling %s: %v", dir, err)
	// Smaller writes take the last blocks a large one could not.
	for _, err = f.Write(chunk[:512]); err == nil; _, err = f.Write(chunk[:512]) {
	}
	require.NoError(t, f.Close())
	free = func() { _ = os.Remove(path) }
	t.Cleanup(free)
	return free
}
