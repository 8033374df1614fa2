package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/ident"
)

// TestCgroupNamesAreUniqueAndOwned: a run in a caller's home is named
// after the owner and a sequence number, not after the home (every verify
// step's home is called "compile"), so two of them under one uid differ;
// both names carry the owner tag the stale sweep reads, and a home the
// Runner made keeps its own (already unique) name.
func TestCgroupNamesAreUniqueAndOwned(t *testing.T) {
	caller := &box{uid: 7, home: scratchDir{path: "/srv/a/compile"}}
	again := &box{uid: 7, home: scratchDir{path: "/srv/b/compile"}}
	a, b := cgroupName(IsolationNamespace, caller), cgroupName(IsolationNamespace, again)
	require.NotEqual(t, a, b, "two runs in callers' homes of one name under one uid")
	ownedHome := scratchPrefix() + "xyz"
	owned := &box{uid: 7, home: scratchDir{path: "/srv/" + ownedHome, owned: true}}
	require.Equal(t, "ll-"+ownedHome+"-7", cgroupName(IsolationLandlock, owned))
	for _, name := range []string{a, b} {
		rest, ok := strings.CutPrefix(name, cgroupPrefixes[IsolationNamespace])
		require.True(t, ok, name)
		require.True(t, strings.HasPrefix(rest, scratchPrefix()), "%s carries the owner tag", name)
		require.False(t, deadOwner(rest), "%s: its owner (this test) is alive", name)
	}
}

// TestRunsInCallersHomesOfOneNameUnderOneUID is the flake it came from
// (TestE2EVerifyCoqCorpus, "create cgroup: file exists"): a uid goes back
// to its pool, and so to another worker on the host, before its run's
// cgroup is removed; that worker's next verify step (home "compile") ran
// as the same uid and its cgroup's name was taken. Here two Runners whose
// pools hand out the same uid run in two homes called "compile" at once:
// both run.
func TestRunsInCallersHomesOfOneNameUnderOneUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the uid pool is used by root workers only")
	}
	base := 3_900_500_000 + uint32(os.Getpid()%1000)*10
	runner := func() *Runner {
		r := nsRunner(t)
		r.cfg.UIDBase, r.cfg.UIDCount = base, 1
		r.setupHost()
		// Pools of the test's own without host-wide leases: the two hand
		// out the same uid, as a released lease does.
		r.pool = ident.NewPool(base, 1, "")
		return r
	}
	ra, rb := runner(), runner()
	if ra.cgroups.Version == 0 {
		t.Skip("no cgroup on this host: runs have no cgroup to name")
	}
	home := func() string {
		dir := filepath.Join(hostDir(t), "compile")
		require.NoError(t, os.Mkdir(dir, 0o777))
		require.NoError(t, os.Chmod(dir, 0o777))
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hold, release := io.Pipe()
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		// Runs until release is closed: its cgroup exists meanwhile.
		res, err := ra.Run(ctx, Spec{Argv: []string{"/bin/cat"}, Stdin: hold, Scratch: home(), Started: func(Handle) { close(started) }})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("the first run exited %d", res.ExitCode)
		}
		first <- err
	}()
	select {
	case <-started:
	case err := <-first:
		require.NoError(t, err, "the first run ended before the second started")
		t.Fatal("the first run ended before the second started")
	}
	res, err := rb.Run(ctx, Spec{Argv: []string{"/bin/true"}, Scratch: home()})
	require.NoError(t, err, "the second run, same uid, same home name, while the first runs")
	require.Equal(t, 0, res.ExitCode)
	require.NoError(t, release.Close())
	require.NoError(t, <-first)
}
