package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// v1Cgroups is the host's cgroup support when it is v1 and usable here
// (skipping otherwise: on v2 inits are cloned into their cgroup by
// CLONE_INTO_CGROUP, which package sandbox's
// TestInitStartsWhereClone3IsRefused covers), and a fresh run cgroup in
// it.
func v1Cgroups(t *testing.T) (Support, *Group) {
	t.Helper()
	cs := Detect()
	if cs.Version != 1 {
		t.Skipf("not cgroup v1 here (%s): nothing to clone into by thread", cs)
	}
	require.True(t, cs.threadMove, "a thread of a process that can write its own v1 cgroups can move itself back into them")
	cg, err := cs.Create(fmt.Sprintf("born-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")), 64<<20, 16)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cg.Remove() })
	return cs, cg
}

// onWorkerThread runs fn on a locked thread that is not the main one (as a
// run's launching goroutine is most of the time; CloneInside refuses the
// main thread).
func onWorkerThread(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	var try func()
	try = func() {
		runtime.LockOSThread()
		if unix.Gettid() == os.Getpid() {
			// Holding the main thread, so the next goroutine gets another.
			go try()
			return // the goroutine ends locked: the runtime keeps the main thread
		}
		defer runtime.UnlockOSThread()
		defer close(done)
		fn()
	}
	go try()
	<-done
}

// cgroupOf is the v1 path of ctrl in a /proc/.../cgroup file.
func cgroupOf(t *testing.T, file, ctrl string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ","+ctrl+",") {
			return filepath.Join(mountPoint, ctrl, parts[2])
		}
	}
	t.Fatalf("%s has no %s line: %s", file, ctrl, b)
	return ""
}

// requireWorkerOutside: no thread of this process is in cg.
func requireWorkerOutside(t *testing.T, cs Support) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	for _, task := range tasks {
		for ctrl, parent := range cs.parents {
			f := "/proc/self/task/" + task.Name() + "/cgroup"
			if _, err := os.Stat(f); err != nil {
				continue // the thread exited
			}
			require.Equal(t, parent, cgroupOf(t, f, ctrl), "thread %s of the worker left its %s cgroup", task.Name(), ctrl)
		}
	}
}

// On cgroup v1 the init is cloned from a thread that stepped into the
// run's cgroups: it is born in them (no attach, no RCU grace period), the
// thread is back in the worker's cgroups, and the run's cgroups hold the
// init alone. The control: a child started by the same thread without it
// is in the worker's cgroups (what the attach would then have to fix).
func TestInitBornInItsV1Cgroup(t *testing.T) {
	cs, cg := v1Cgroups(t)
	onWorkerThread(t, func() {
		control := exec.Command("/bin/sleep", "60")
		require.NoError(t, control.Start())
		t.Cleanup(func() { _ = control.Process.Kill(); _ = control.Wait() })
		for ctrl := range cg.dirs {
			require.Equal(t, cs.parents[ctrl], cgroupOf(t, fmt.Sprintf("/proc/%d/cgroup", control.Process.Pid), ctrl),
				"control: a plain child is in the worker's %s cgroup", ctrl)
		}

		init := exec.Command("/bin/sleep", "60")
		born, err := cg.CloneInside(init.Start)
		require.NoError(t, err)
		require.True(t, born)
		t.Cleanup(func() { _ = init.Process.Kill(); _ = init.Wait() })
		for ctrl, dir := range cg.dirs {
			require.Equal(t, dir, cgroupOf(t, fmt.Sprintf("/proc/%d/cgroup", init.Process.Pid), ctrl), "the init is born in the run's %s cgroup", ctrl)
			require.Equal(t, cs.parents[ctrl], cgroupOf(t, "/proc/thread-self/cgroup", ctrl), "the launching thread is back in the worker's %s cgroup", ctrl)
			b, err := os.ReadFile(filepath.Join(dir, "tasks"))
			require.NoError(t, err)
			require.Equal(t, strconv.Itoa(init.Process.Pid), strings.TrimSpace(string(b)), "the run's %s cgroup holds the init alone", ctrl)
		}
	})
	requireWorkerOutside(t, cs)
}

// The sweep of a run's cgroup kills what is in it; a thread of the worker
// found there (CloneInside's window) is moved out, never signalled: this
// test process would die otherwise.
func TestSweepNeverSignalsTheWorker(t *testing.T) {
	cs, cg := v1Cgroups(t)
	onWorkerThread(t, func() {
		for _, dir := range cg.dirs {
			require.NoError(t, writeTasks(dir, "0"))
		}
		procs, err := cg.procs()
		require.NoError(t, err)
		require.Equal(t, []int{os.Getpid()}, procs, "control: a thread of this process is in the run's cgroup")
		require.NoError(t, cg.Sweep())
		for ctrl := range cg.dirs {
			require.Equal(t, cs.parents[ctrl], cgroupOf(t, "/proc/thread-self/cgroup", ctrl), "the sweep moved the thread back to the worker's %s cgroup", ctrl)
		}
	})
	requireWorkerOutside(t, cs)
}
