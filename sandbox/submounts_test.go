package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/home"
	"golang.org/x/sys/unix"
)

// A toolchain path with host mounts under it (/sys/fs here: cgroupfs) is
// refused by the kernel (binds are not recursive, and a sandbox's user
// namespace inherits those mounts locked), and the error says why, names
// them and the fix, instead of a bare "invalid argument". The control: a
// mount without mounts under it binds.
func TestBindOfAPathWithSubmounts(t *testing.T) {
	mi := home.ReadMountinfo()
	under := home.SubmountsOf(mi, "/sys/fs")
	if len(under) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("no mounts under /sys/fs (cgroupfs) to bind past: CI hosts have them")
		}
		t.Skip("this host has no mounts under /sys/fs to bind past")
	}
	leaf := under[len(under)-1]
	require.Empty(t, home.SubmountsOf(mi, leaf))
	r := nsRunner(t)
	run := func(path string) (string, error) {
		var out, errb bytes.Buffer
		res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/ls", path}, ReadOnly: []string{path},
			Stdout: &out, Stderr: &errb, Limits: Limits{Wall: 30 * time.Second}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, errb.String())
		}
		return out.String(), err
	}
	_, err := run(leaf)
	require.NoError(t, err, "control: %s has nothing mounted under it", leaf)
	_, err = run("/sys/fs")
	require.ErrorIs(t, err, ErrSubmounts)
	require.ErrorIs(t, err, unix.EINVAL)
	require.ErrorContains(t, err, under[0])
	require.ErrorContains(t, err, "bind a path without mounts under it")
}
