package initproc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestOpenSourceRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")))
	s, err := openSource(filepath.Join(dir, "real"))
	require.NoError(t, err, "control: the resolved path opens")
	require.NoError(t, unix.Close(s.fd))
	_, err = openSource(filepath.Join(dir, "link", "sub"))
	require.ErrorIs(t, err, unix.ELOOP, "a path through a symlink is refused")
	_, err = openSource(filepath.Join(dir, "link"))
	require.ErrorIs(t, err, unix.ELOOP)
}
