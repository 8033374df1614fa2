package home

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// An explicit root is created as needed; the default one is created
// private, narrowed back to PrivateMode when it is this user's, and
// refused as a *StepError wrapping ErrRootNotPrivate when it is not a
// real directory.
func TestMakeRoot(t *testing.T) {
	explicit := filepath.Join(t.TempDir(), "a", "b")
	require.NoError(t, MakeRoot(explicit, true))
	require.DirExists(t, explicit)

	fresh := filepath.Join(t.TempDir(), "root")
	require.NoError(t, MakeRoot(fresh, false))
	requireMode(t, fresh, PrivateMode())

	narrow := filepath.Join(t.TempDir(), "root")
	require.NoError(t, os.Mkdir(narrow, 0o700))
	require.NoError(t, os.Chmod(narrow, 0o500))
	require.NoError(t, MakeRoot(narrow, false))
	requireMode(t, narrow, PrivateMode())

	link := filepath.Join(t.TempDir(), "root")
	require.NoError(t, os.Symlink(t.TempDir(), link))
	err := MakeRoot(link, false)
	require.ErrorIs(t, err, ErrRootNotPrivate)
	var se *StepError
	require.ErrorAs(t, err, &se)
	require.Equal(t, StepError{Step: "check scratch root", Path: link, Err: se.Err}, *se)
	require.ErrorContains(t, err, "it is not a directory (L")
	require.ErrorContains(t, err, "--scratch-root")
}

func requireMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(dir)
	require.NoError(t, err)
	require.True(t, fi.IsDir(), dir)
	require.Equal(t, uint32(os.Geteuid()), fi.Sys().(*syscall.Stat_t).Uid, dir)
	require.Equal(t, mode, fi.Mode().Perm(), dir)
}
