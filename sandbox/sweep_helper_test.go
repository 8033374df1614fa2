package sandbox

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/cgroup"
)

// sweeperEnv makes the test binary a "next worker": it creates a Runner on
// the scratch root the variable names (New sweeps what dead owners left
// under that root and under its own cgroup) and exits 0, or 2 on error.
// Dispatched from an init function, before TestMain.
const sweeperEnv = "WARREN_SANDBOX_TEST_SWEEPER"

func init() {
	root, ok := os.LookupEnv(sweeperEnv)
	if !ok {
		return
	}
	if _, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: root}); err != nil {
		fmt.Fprintln(os.Stderr, "sweeper:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// testCgroup gives the processes of one test a cgroup v1 parent of their
// own (one directory per controller), so the run cgroups of the workers it
// starts are nested there: a Runner sweeps only its own cgroup's children,
// so no other Runner on the host (other packages' tests, run in parallel
// as root) can sweep them while this test looks. Without cgroup v1 it
// isolates nothing and wrap returns argv as is.
type testCgroup struct {
	dirs map[string]string // controller -> directory
}

func newTestCgroup(t *testing.T, cg cgroup.Support) *testCgroup {
	t.Helper()
	tc := &testCgroup{dirs: map[string]string{}}
	if cg.Version != 1 {
		return tc
	}
	name := fmt.Sprintf("sbtest-%d-%06d", os.Getpid(), rand.IntN(1_000_000))
	for ctrl, parent := range cg.Parents() {
		dir := filepath.Join(parent, name)
		require.NoError(t, os.Mkdir(dir, 0o755))
		tc.dirs[ctrl] = dir
	}
	t.Cleanup(func() {
		for _, dir := range tc.dirs {
			// Children first (run cgroups a failed test left), then itself.
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.IsDir() {
					_ = os.Remove(filepath.Join(dir, e.Name()))
				}
			}
			_ = os.Remove(dir)
		}
	})
	return tc
}

// parents are the directories the run cgroups of a worker started with
// wrap are created in; nil without isolation.
func (tc *testCgroup) parents() []string {
	var ps []string
	for _, d := range tc.dirs {
		ps = append(ps, d)
	}
	return ps
}

// wrap prefixes argv so the process joins the test's cgroup before it
// execs (the shell moves itself, then becomes argv: no window in which
// the worker runs outside it).
func (tc *testCgroup) wrap(argv []string) []string {
	if len(tc.dirs) == 0 {
		return argv
	}
	var join []string
	for _, d := range tc.dirs {
		join = append(join, fmt.Sprintf("echo $$ > '%s/cgroup.procs' || exit 97", d))
	}
	script := strings.Join(join, "; ") + `; exec "$0" "$@"`
	return append([]string{"/bin/sh", "-c", script}, argv...)
}
