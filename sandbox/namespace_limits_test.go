package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// hostKeepsServing runs a trivial sandbox: the host still starts tasks.
func hostKeepsServing(t *testing.T, r *Runner) {
	t.Helper()
	o := runIn(t, r, Spec{Argv: sh("echo alive")})
	require.Equal(t, "alive\n", o.stdout)
}

func TestForkBombIsContainedByTheProcessLimit(t *testing.T) {
	r := nsRunner(t)
	bomb := func(n int) []string {
		return py(fmt.Sprintf(`
import os, time
n = 0
try:
    for _ in range(%d):
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
    print("forked", n)
except OSError as e:
    print("blocked", n, e.errno)
`, n))
	}
	// Control: a modest number of forks works under the same limit.
	o := runIn(t, r, Spec{Argv: bomb(5), Limits: Limits{Processes: 16}})
	require.Equal(t, "forked 5\n", o.stdout)

	o = runIn(t, r, Spec{Argv: bomb(10_000), Limits: Limits{Processes: 16}})
	require.True(t, strings.HasPrefix(o.stdout, "blocked "), o.stdout)
	require.True(t, strings.HasSuffix(o.stdout, fmt.Sprintf(" %d\n", unix.EAGAIN)), o.stdout)
	var n int
	_, err := fmt.Sscanf(o.stdout, "blocked %d", &n)
	require.NoError(t, err)
	require.Less(t, n, 16)
	hostKeepsServing(t, r)
}

func TestMemoryBombIsContained(t *testing.T) {
	r := nsRunner(t)
	alloc := allocProbe
	o := runIn(t, r, Spec{Argv: alloc(32), Limits: Limits{Memory: 256 << 20}})
	require.Equal(t, "allocated\n", o.stdout, "control: within the limit")
	require.Greater(t, o.res.PeakMemory, int64(32<<20), "peak memory covers the allocation")

	o = runIn(t, r, Spec{Argv: alloc(1024), Limits: Limits{Memory: 256 << 20}})
	require.NotEqual(t, "allocated\n", o.stdout)
	require.True(t, o.stdout == "MemoryError\n" || o.res.Signal == "SIGKILL", "stopped by RLIMIT_AS or the cgroup: %q %+v", o.stdout, o.res)
	hostKeepsServing(t, r)
}

func TestDiskFillStopsAtTheFileSizeLimit(t *testing.T) {
	r := nsRunner(t)
	scratch := hostDir(t)
	fill := func(mb int) []string {
		return py(fmt.Sprintf(`
import os
try:
    with open(os.environ["HOME"] + "/fill", "wb") as f:
        for _ in range(%d): f.write(b"\0" * (1 << 20))
    print("written")
except OSError as e:
    print("ERR", e.errno)
`, mb))
	}
	o := runIn(t, r, Spec{Argv: fill(2), Scratch: scratch, Limits: Limits{FileSize: 4 << 20}})
	require.Equal(t, "written\n", o.stdout, "control: within the limit")

	o = runIn(t, r, Spec{Argv: fill(64), Scratch: scratch, Limits: Limits{FileSize: 4 << 20}})
	require.Equal(t, fmt.Sprintf("ERR %d\n", unix.EFBIG), o.stdout)
	fi, err := os.Stat(filepath.Join(scratch, "fill"))
	require.NoError(t, err)
	require.LessOrEqual(t, fi.Size(), int64(4<<20))
	hostKeepsServing(t, r)
}

func TestResourceLimitsAreReported(t *testing.T) {
	r := nsRunner(t)
	o := runIn(t, r, Spec{Argv: sh("true")})
	if os.Geteuid() == 0 && r.cgroups.Version != 0 {
		require.True(t, strings.HasPrefix(o.res.ResourceLimits, "cgroup v"), o.res.ResourceLimits)
	} else {
		require.True(t, strings.HasPrefix(o.res.ResourceLimits, "rlimits only ("), o.res.ResourceLimits)
	}
	require.Equal(t, r.cgroups.String(), o.res.ResourceLimits)
}

func TestRlimitsAreApplied(t *testing.T) {
	r := nsRunner(t)
	probe := py(`import resource as r; print([r.getrlimit(x) for x in (r.RLIMIT_NOFILE, r.RLIMIT_NPROC, r.RLIMIT_FSIZE, r.RLIMIT_CPU, r.RLIMIT_AS, r.RLIMIT_CORE, r.RLIMIT_SIGPENDING)])`)
	o := runIn(t, r, Spec{Argv: probe,
		Limits: Limits{OpenFiles: 77, Processes: 33, FileSize: 1 << 20, CPU: 9_500_000_000, Memory: 512 << 20}})
	// RLIMIT_AS only without a cgroup: with one, the cgroup bounds memory
	// and the address space is left as the worker's (unlimited here).
	as := "(536870912, 536870912)"
	if r.cgroups.Version != 0 {
		as = "(-1, -1)"
	}
	require.Equal(t, "[(77, 77), (33, 33), (1048576, 1048576), (10, 11), "+as+", (0, 0), (1024, 1024)]\n", o.stdout)
}

func TestRunIsInItsOwnCgroup(t *testing.T) {
	r := nsRunner(t)
	r.setupHost()
	if r.cgroups.Version != 1 {
		t.Skipf("no usable cgroup v1 here (%s): the rlimit fallback is covered by TestResourceLimitsAreReported", r.cgroups)
	}
	probe := sh("grep -E ':(memory|pids):' /proc/self/cgroup; read _")
	_, out := runOut(t, sh("grep -E ':(memory|pids):' /proc/self/cgroup")...)
	require.Contains(t, out, "pids:/", "control: the host child is in the worker's cgroup")
	spec, onHost := heldForCgroupRead(Spec{Argv: probe, Limits: Limits{Processes: 77}})
	o := runIn(t, r, spec)
	lines := hostCgroupLines(onHost())
	require.Len(t, lines, 2, "memory and pids lines on the host")
	for _, l := range lines {
		require.Regexp(t, `:(memory|pids):.*/warren-run-[0-9]+\.[0-9]+-[0-9]+-[0-9]+$`, l, "seen from the host: the run's own cgroup")
	}
	for _, l := range strings.Split(strings.TrimSpace(o.stdout), "\n") {
		// The cgroup namespace is rooted where the init was cloned: in its
		// own cgroup when born there ("/"), at the worker's when it was
		// attached (cgroup.Group.CloneInside's fallback). Never the host's tree.
		require.Regexp(t, `:(memory|pids):/(warren-run-[0-9]+\.[0-9]+-[0-9]+-[0-9]+)?$`, l, "relative to the cgroup namespace root")
	}
}

// heldForCgroupRead makes spec's task wait (its script ends with `read _`)
// until the host has read the task's /proc/PID/cgroup (in Spec.Started),
// then lets it end: on cgroup v1 an exiting task reads as "/" in every
// hierarchy (the kernel's proc_cgroup_show), so a task that ended first
// would look outside its cgroup. Stdin stays a plain reader, so the run
// can still be served warm.
func heldForCgroupRead(spec Spec) (Spec, func() []byte) {
	pr, pw := io.Pipe()
	var onHost []byte
	spec.Stdin = pr
	spec.Limits.Wall = 30 * time.Second // a run that never starts its task does not hold the test
	spec.Started = func(h Handle) {
		onHost, _ = os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", h.(*runHandle).pid))
		_ = pw.Close()
	}
	return spec, func() []byte { return onHost }
}

// hostCgroupLines are the memory and pids lines of a /proc/PID/cgroup.
func hostCgroupLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if regexp.MustCompile(`:(memory|pids):`).MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}
