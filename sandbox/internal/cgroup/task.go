package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A cgroup can serve task after task (a sandbox slot's): its counters are
// made per task here, its processes checked between tasks.

// HoldsOnly reports whether pid is the only process in every hierarchy
// of the cgroup.
func (cg *Group) HoldsOnly(pid int) bool {
	want := strconv.Itoa(pid)
	for _, dir := range cg.dirs {
		// Opened afresh each time, never kept (files.go): a v1
		// cgroup.procs descriptor read again serves the pid list it loaded
		// first for up to a second, which would miss a leftover process.
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || strings.TrimSpace(string(b)) != want {
			return false
		}
	}
	return true
}

// BeginTask makes the cgroup's counters the next task's: the peak memory
// is reset (v1 memory.max_usage_in_bytes; v2 memory.peak, reset per open
// file since Linux 6.12: the descriptor is kept for the task, and without
// the reset no cgroup peak is reported, the task's own rusage is), and
// the OOM kill count so far becomes the base OOMKills subtracts. The
// limits are the task's (pids: its own plus the slot parent's threads).
func (cg *Group) BeginTask(memory, pids int64) error {
	if cg == nil {
		return nil
	}
	cg.endTask()
	cg.oomBase = 0
	cg.oomBase = cg.OOMKills()
	if err := cg.SetLimits(memory, pids); err != nil {
		return err
	}
	if cg.version == 1 {
		return cg.kept.write(cg.keptPath("memory", "memory.max_usage_in_bytes"), "0")
	}
	f, err := os.OpenFile(filepath.Join(cg.dirs[""], "memory.peak"), os.O_RDWR, 0)
	if err != nil {
		cg.peakUnknown = true
		return nil
	}
	if _, err := f.WriteString("reset\n"); err != nil {
		f.Close()
		cg.peakUnknown = true
		return nil
	}
	cg.peakFile, cg.peakUnknown = f, false
	return nil
}

// TasksNow is how many tasks (threads) the cgroup holds: a slot's parent
// alone, between tasks.
func (cg *Group) TasksNow() (int64, error) {
	if cg == nil {
		return 0, nil
	}
	return cg.readPids("pids.current")
}

// endTask drops what BeginTask kept for the last task.
func (cg *Group) endTask() {
	if cg != nil && cg.peakFile != nil {
		_ = cg.peakFile.Close()
		cg.peakFile = nil
	}
}

// readPids reads a number from the cgroup's pids controller.
func (cg *Group) readPids(name string) (int64, error) {
	b, err := cg.kept.read(cg.keptPath("pids", name))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
