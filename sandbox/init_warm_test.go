package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// warmRunner is nsRunner with Prestart warm sandboxes per view, closed
// before the scratch root is removed.
func warmRunner(t *testing.T, prestart int) *Runner {
	t.Helper()
	cold := nsRunner(t)
	r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: cold.cfg.ScratchRoot, Prestart: prestart})
	require.NoError(t, err)
	r.noLayer.Store(true)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

func scratchDirs(t *testing.T, r *Runner) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(r.cfg.ScratchRoot)
	require.NoError(t, err)
	m := map[string]bool{}
	for _, e := range ents {
		m[filepath.Join(r.cfg.ScratchRoot, e.Name())] = true
	}
	return m
}

func waitWarm(t *testing.T, r *Runner, spec Spec, n int) {
	t.Helper()
	spec.Limits = spec.Limits.withDefaults(r.cfg.Defaults)
	require.Eventually(t, func() bool { return r.warm.ready(namespaceMode{}.warmKey(spec)) == n }, 20*time.Second, 5*time.Millisecond, "warm pool fills")
}

// TestWarmSandboxesServeMatchingViewsOnly: a run whose view matches the
// warm key runs in a sandbox built before it (its scratch directory existed
// already), with its files, cwd and view; a run with another view starts
// cold, and that view gets its own warm pool.
func TestWarmSandboxesServeMatchingViewsOnly(t *testing.T) {
	r := warmRunner(t, 1)
	waitWarm(t, r, Spec{}, 1)
	before := scratchDirs(t, r)
	o := runIn(t, r, Spec{
		Argv:  sh(`pwd; cat f; echo $HOME; test ! -e /root && echo isolated`),
		Files: map[string][]byte{"sub/f": []byte("file\n")}, Cwd: "sub",
	})
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Len(t, lines, 4, o.stdout+o.stderr)
	require.True(t, before[lines[2]], "ran in a warm sandbox: %s existed before the run (%v)", lines[2], before)
	require.Equal(t, []string{lines[2] + "/sub", "file", lines[2], "isolated"}, lines)
	require.NoDirExists(t, lines[2], "scratch removed")

	ro := hostDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(ro, "tool"), []byte("tool\n"), 0o644))
	spec := Spec{Argv: sh(`cat ` + ro + `/tool; echo $HOME; touch ` + ro + `/w 2>/dev/null || echo ro`), ReadOnly: []string{ro}}
	before = scratchDirs(t, r)
	o = runIn(t, r, spec)
	lines = strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Equal(t, "tool", lines[0], o.stderr)
	require.False(t, before[lines[1]], "another view starts cold")
	require.Equal(t, "ro", lines[2])

	waitWarm(t, r, spec, 1)
	before = scratchDirs(t, r)
	o = runIn(t, r, spec)
	lines = strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Equal(t, "tool", lines[0], o.stderr)
	require.True(t, before[lines[1]], "the view now has a warm pool")
	require.Equal(t, "ro", lines[2])
	require.NoFileExists(t, filepath.Join(ro, "w"))
}

// TestFailedWarmSetupIsDiscarded: a warm sandbox whose view fails to build
// is never offered; runs start cold and succeed, nothing is left behind.
func TestFailedWarmSetupIsDiscarded(t *testing.T) {
	r := warmRunner(t, 1)
	waitWarm(t, r, Spec{}, 1)
	r.warm.mu.Lock()
	r.warm.viewHook = func(ns *nsConfig) {
		ns.Binds = append(ns.Binds, bindMount{Source: "/nonexistent-warren-warm-test"})
	}
	r.warm.mu.Unlock()
	spec := Spec{Argv: sh(`echo $HOME`), Limits: Limits{TmpSize: 8 << 20}} // a new view: built with the hook
	failed := func() int {
		r.warm.mu.Lock()
		defer r.warm.mu.Unlock()
		return r.warm.failed
	}
	for range 3 {
		before := scratchDirs(t, r)
		o := runIn(t, r, spec)
		require.False(t, before[strings.TrimSpace(o.stdout)], "cold run")
		require.Eventually(t, func() bool { return failed() > 0 }, 20*time.Second, 5*time.Millisecond)
	}
	require.Zero(t, r.warm.ready(namespaceMode{}.warmKey(spec)), "a failed warm sandbox is never offered")
	require.NoError(t, r.Close())
	require.Empty(t, scratchDirs(t, r), "failed and closed warm sandboxes leave nothing")
	if r.pool != nil {
		require.Empty(t, r.pool.Quarantined())
	}
}

// TestCloseKillsAndReleasesWarmSandboxes: Close reaps every idle warm
// init, removes their scratch directories and cgroups and frees their
// uids; it is idempotent and later runs start cold.
func TestCloseKillsAndReleasesWarmSandboxes(t *testing.T) {
	r := warmRunner(t, 2)
	waitWarm(t, r, Spec{}, 2)
	ws := r.warm.sandboxes()
	require.Len(t, ws, 2)
	for _, w := range ws {
		require.NoError(t, syscallKill0(w.pid), "warm init %d alive before Close", w.pid)
	}
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "idempotent")
	for _, w := range ws {
		require.Error(t, syscallKill0(w.pid), "warm init %d reaped", w.pid)
		require.NoDirExists(t, w.home.path)
		if w.cg != nil {
			for _, d := range w.cg.Dirs() {
				require.NoDirExists(t, d)
			}
		}
		if r.pool != nil {
			require.False(t, r.pool.InUse(w.uid), "uid %d released", w.uid)
		}
	}
	require.Empty(t, scratchDirs(t, r))
	o := runIn(t, r, Spec{Argv: sh("echo cold")})
	require.Equal(t, "cold\n", o.stdout)
	require.Zero(t, r.warm.ready(namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})), "no refill after Close")
}

// syscallKill0 is kill(pid, 0): nil while pid exists (zombies included).
func syscallKill0(pid int) error { return unix.Kill(pid, 0) }

// TestWarmSandboxesApplyTheLandlockLayer: the task phase of a warm
// sandbox applies the layer (seccomp filter in force, a netlink socket
// refused) exactly as a cold run does; the control is the same probe with
// the layer off.
func TestWarmSandboxesApplyTheLandlockLayer(t *testing.T) {
	if landlockABI().require(landlockMinABIDefault) != nil {
		t.Skip("Landlock ABI below the default floor: no layer to apply (TestNamespaceModeWithTheLandlockLayer covers the refusal)")
	}
	probe := sh(`grep '^Seccomp:' /proc/self/status; ` + python + ` -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print("netlink")' 2>/dev/null || echo refused`)
	off := warmRunner(t, 1)
	waitWarm(t, off, Spec{}, 1)
	o := runIn(t, off, Spec{Argv: probe})
	require.Equal(t, "Seccomp:\t0\nnetlink\n", o.stdout, "control: no layer")

	on := warmRunner(t, 1)
	on.noLayer.Store(false)
	waitWarm(t, on, Spec{}, 1)
	before := scratchDirs(t, on)
	o = runIn(t, on, Spec{Argv: append(probe[:2:2], probe[2]+`; echo $HOME`)})
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Equal(t, []string{"Seccomp:\t2", "refused"}, lines[:2], o.stderr)
	require.True(t, before[lines[2]], "ran warm")
	require.Equal(t, layersLayered.String(), o.res.InForce)
}

// TestWarmSandboxesRunInTheirOwnCgroup: the warm init joins its run's
// cgroup before it builds anything, and the task's limits reach it.
func TestWarmSandboxesRunInTheirOwnCgroup(t *testing.T) {
	r := warmRunner(t, 1)
	if r.cgroups.Version == 0 {
		t.Skip("no usable cgroup here (" + r.cgroups.Why + "): rlimits only, covered by TestResourceLimitsAreReported")
	}
	waitWarm(t, r, Spec{}, 1)
	before := scratchDirs(t, r)
	spec, onHost := heldForCgroupRead(Spec{Argv: sh(`grep -E ':(memory|pids):' /proc/self/cgroup; echo $HOME; read _`), Limits: Limits{Processes: 77}})
	o := runIn(t, r, spec)
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	home := lines[len(lines)-1]
	require.True(t, before[home], "ran warm")
	own := `warren-` + regexp.QuoteMeta(filepath.Base(home)) + `-[0-9]+`
	host := hostCgroupLines(onHost())
	require.Len(t, host, 2, "memory and pids lines on the host")
	for _, l := range host {
		require.Regexp(t, `:(memory|pids):.*/`+own+`$`, l, "seen from the host: the run's own cgroup")
	}
	for _, l := range lines[:len(lines)-1] {
		// Inside: relative to the cgroup namespace's root, the run's own
		// cgroup when the init was born in it (cgroup.Group.CloneInside).
		require.Regexp(t, `:(memory|pids):/(`+own+`)?$`, l)
	}
}

// TestWarmLandlockSandboxes: the Landlock mode's warm sandboxes (home,
// TMPDIR, cgroup and init made before the task) run tasks under the same
// policy as cold ones (writes outside the home denied, the home writable,
// the uid dropped as root) and Close releases them.
func TestWarmLandlockSandboxes(t *testing.T) {
	if landlockABI().require(landlockMinABIDefault) != nil {
		t.Skip("Landlock ABI below the default floor: the mode refuses (TestLandlockRefusesBelowMinABI)")
	}
	cold := nsRunner(t)
	r, err := startedNew(Config{Isolation: IsolationLandlock, ScratchRoot: cold.cfg.ScratchRoot, Prestart: 1, UIDBase: 1_900_100_700, UIDCount: 16})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	k := landlockMode{}.warmKey(Spec{})
	require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 20*time.Second, 5*time.Millisecond)
	before := scratchDirs(t, r)
	victim := hostDir(t)
	require.NoError(t, os.Chmod(victim, 0o777))
	o := runIn(t, r, Spec{
		Argv:  sh(`cat f; echo $HOME; id -u; echo x > $HOME/w && echo home-ok; echo x > ` + victim + `/w 2>/dev/null || echo denied`),
		Files: map[string][]byte{"f": []byte("file\n")},
	})
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Len(t, lines, 5, o.stdout+o.stderr)
	require.Equal(t, "file", lines[0])
	require.True(t, before[lines[1]], "ran in a warm sandbox")
	if os.Geteuid() == 0 {
		require.True(t, strings.HasPrefix(lines[2], "19001007"), "a pool uid: %s", lines[2])
	}
	require.Equal(t, []string{"home-ok", "denied"}, lines[3:])
	require.Equal(t, layersLandlockOnly.String(), o.res.InForce)
	require.NoFileExists(t, filepath.Join(victim, "w"))
	require.NoDirExists(t, lines[1], "home removed")

	require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 20*time.Second, 5*time.Millisecond, "refilled")
	ws := r.warm.sandboxes()
	require.NoError(t, r.Close())
	for _, w := range ws {
		require.Error(t, syscallKill0(w.pid), "warm init reaped")
		require.NoDirExists(t, w.home.path)
	}
	if r.pool != nil {
		require.Empty(t, r.pool.Quarantined())
	}
}

// TestWarmRunsShareOneWriterSafely: a run whose Stdout and Stderr are the
// same writer (as exec.Cmd allows) gets every byte of both streams in a
// warm sandbox, in both modes: the two copies from the sandbox's pipes
// take turns on it (they raced before, and output was lost or zeroed in
// a few percent of runs). The control is the cold path.
func TestWarmRunsShareOneWriterSafely(t *testing.T) {
	script := `i=0; while [ $i -lt 200 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done`
	var want []string
	for i := range 200 {
		want = append(want, fmt.Sprintf("out%d", i), fmt.Sprintf("err%d", i))
	}
	for _, iso := range []Isolation{IsolationNamespace, IsolationLandlock} {
		t.Run(string(iso), func(t *testing.T) {
			if iso == IsolationLandlock {
				llRequire(t, landlockMinABIDefault)
			}
			for _, prestart := range []int{0, 1} { // cold (the control), warm
				r, err := startedNew(Config{Isolation: iso, ScratchRoot: llTempDir(t, 0o711), UIDBase: 1_900_100_650, UIDCount: 4, Prestart: prestart})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, r.Close()) })
				spec := Spec{Limits: Limits{}.withDefaults(r.cfg.Defaults)}
				key := namespaceMode{}.warmKey(spec)
				if iso == IsolationLandlock {
					key = landlockMode{}.warmKey(spec)
				}
				for range 10 {
					if prestart > 0 {
						require.Eventually(t, func() bool { return r.warm.ready(key) == 1 }, 20*time.Second, time.Millisecond)
					}
					var out bytes.Buffer
					res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", script}, Stdout: &out, Stderr: &out})
					require.NoError(t, err)
					require.Equal(t, 0, res.ExitCode)
					got := strings.Fields(out.String())
					sort.Strings(got)
					w := slices.Clone(want)
					sort.Strings(w)
					require.Equal(t, w, got, "prestart %d", prestart)
				}
			}
		})
	}
}

// TestWarmStats: Warm counts the ready sandboxes of every view and the
// refills in flight; a run takes one and its refill brings it back; after
// Close nothing is ready.
func TestWarmStats(t *testing.T) {
	r := warmRunner(t, 2)
	waitWarm(t, r, Spec{}, 2)
	require.Equal(t, WarmStats{Ready: 2}, r.Warm())
	runIn(t, r, Spec{Argv: []string{"/bin/true"}})
	require.Eventually(t, func() bool { return r.Warm() == WarmStats{Ready: 2} }, 20*time.Second, 5*time.Millisecond, "refilled")
	runIn(t, r, Spec{Argv: []string{"/bin/true"}, Network: NetworkLoopback}) // another view: a pool of its own
	require.Eventually(t, func() bool { return r.Warm() == WarmStats{Ready: 4} }, 20*time.Second, 5*time.Millisecond, "two views, two each")
	require.NoError(t, r.Close())
	require.Equal(t, WarmStats{}, r.Warm())
}
