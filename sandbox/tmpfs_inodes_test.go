package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/initproc"
)

// fillInodes is a python3 program that makes empty files in the
// directory named by its first argument until one fails or 6000 exist,
// and prints how many it made and the error.
const fillInodes = `
import errno, os, sys
d = sys.argv[1]
n = 0
err = "none"
try:
    while n < 6000:
        open(os.path.join(d, "f%d" % n), "w").close()
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(n, err)
`

// TestTmpfsInodesBounded: a sandbox's home and /tmp are tmpfs with one
// inode per 8 KiB of their size (initproc.TmpfsInodes): a 16 MiB disk
// limit stops empty files (which take no block) at about 2,048 with
// ENOSPC, in every mode that bounds the home. The control: the same
// program in a directory of the host's /dev/shm, a tmpfs with the
// default inodes, makes all 6,000.
func TestTmpfsInodesBounded(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "warren-inodes-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	out, err := exec.Command("/usr/bin/python3", "-c", fillInodes, dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "6000 none\n", string(out), "control: the host's tmpfs")

	const disk = 16 << 20
	limit := int(initproc.TmpfsInodes(disk))
	rows := []struct {
		name string
		iso  Isolation
		r    func(t *testing.T) *Runner
		dir  string
	}{
		{"namespace home", IsolationNamespace, func(t *testing.T) *Runner { return nsRunner(t) }, "."},
		{"namespace /tmp", IsolationNamespace, func(t *testing.T) *Runner { return nsRunner(t) }, "/tmp"},
	}
	if os.Geteuid() == 0 {
		// An ordinary user's Landlock mode refuses a bounded home.
		rows = append(rows, struct {
			name string
			iso  Isolation
			r    func(t *testing.T) *Runner
			dir  string
		}{"landlock home", IsolationLandlock, func(t *testing.T) *Runner { llRequire(t, 6); return llRunner(t, 1_900_100_940) }, "."})
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := row.r(t)
			spec := Spec{Argv: []string{"/usr/bin/python3", "-c", fillInodes, row.dir}, Limits: Limits{Disk: disk, TmpSize: disk}}
			o := modeRun(t, r, row.iso, spec)
			require.Equal(t, 0, o.res.ExitCode, o.stderr)
			n, errName, ok := strings.Cut(strings.TrimSpace(o.stdout), " ")
			require.True(t, ok, o.stdout)
			made, err := strconv.Atoi(n)
			require.NoError(t, err, o.stdout)
			require.Equal(t, "ENOSPC", errName, o.stdout)
			require.LessOrEqual(t, made, limit, o.stdout)
			require.Greater(t, made, limit-64, "the bound is the tmpfs's, not another: %s", o.stdout)
		})
	}
}
