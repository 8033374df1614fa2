package cgroup

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Group is one run's cgroup (one directory per v1 controller). A nil
// *Group is a run without one (limits are rlimits only): SetLimits,
// V2Dir, Attach, NeedsAttach, PeakMemory, OOMKills, Remove, BeginTask,
// TasksNow and CloneInside do nothing then.
type Group struct {
	version int
	dirs    map[string]string
	// parents and threadMove: the Support's (v1_born.go).
	parents    map[string]string
	threadMove bool
	// A slot's task counters (task.go): the OOM kills before the task,
	// and v2's memory.peak as reset for the task (peakUnknown: the reset
	// is refused, no peak is read).
	oomBase     int
	peakFile    *os.File
	peakUnknown bool
	// limits are the memory and pids limits last written (zero: none).
	limits [2]int64
	// kept are its counter files, open (files.go).
	kept keptFiles
}

// removeWait bounds how long Remove waits for exiting tasks to leave.
const removeWait = 2 * time.Second

// Create makes the run cgroup name under each of the worker's own, with
// the memory limit (bytes) and the pids limit. Without a usable interface
// (Version 0) it returns a nil *Group and no error. On failure nothing of
// it is left.
func (c Support) Create(name string, memory, pids int64) (*Group, error) {
	if c.Version == 0 {
		return nil, nil
	}
	cg := &Group{version: c.Version, dirs: map[string]string{}, parents: c.parents, threadMove: c.threadMove}
	for ctrl, parent := range c.parents {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.Remove()
			return nil, err
		}
		cg.dirs[ctrl] = dir
	}
	if err := cg.SetLimits(memory, pids); err != nil {
		cg.Remove()
		return nil, err
	}
	return cg, nil
}

// Dirs maps each controller of the group (v1: "memory", "pids"; v2: "")
// to its directory. The map is a copy.
func (cg *Group) Dirs() map[string]string {
	if cg == nil {
		return nil
	}
	return maps.Clone(cg.dirs)
}

// SetLimits writes the memory and pids limits (a warm sandbox's cgroup
// gets the task's own when the task arrives).
func (cg *Group) SetLimits(memory, pids int64) error {
	if cg == nil {
		return nil
	}
	if cg.limits == [2]int64{memory, pids} {
		return nil // written already (a slot's next task): nothing else writes them
	}
	cg.limits = [2]int64{}
	var writes [][2]string
	if cg.version == 1 {
		// memory+swap too (where swap is accounted), or a run could swap
		// past its limit. The kernel keeps memsw >= memory at every write:
		// lower memory first, raise memsw first.
		mem := [2]string{filepath.Join(cg.dirs["memory"], "memory.limit_in_bytes"), strconv.FormatInt(memory, 10)}
		memsw := [2]string{filepath.Join(cg.dirs["memory"], "memory.memsw.limit_in_bytes"), mem[1]}
		writes = [][2]string{mem, memsw}
		if b, err := os.ReadFile(mem[0]); err == nil {
			if cur, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && memory > cur {
				writes = [][2]string{memsw, mem}
			}
		}
		writes = append(writes, [2]string{filepath.Join(cg.dirs["pids"], "pids.max"), strconv.FormatInt(pids, 10)})
	} else {
		writes = [][2]string{
			{filepath.Join(cg.dirs[""], "memory.max"), strconv.FormatInt(memory, 10)},
			{filepath.Join(cg.dirs[""], "memory.swap.max"), "0"},
			{filepath.Join(cg.dirs[""], "pids.max"), strconv.FormatInt(pids, 10)},
		}
	}
	for _, w := range writes {
		optional := strings.HasSuffix(w[0], "swap.max") || strings.HasSuffix(w[0], "memsw.limit_in_bytes") // no swap accounting
		if err := os.WriteFile(w[0], []byte(w[1]), 0); err != nil && !(optional && errors.Is(err, os.ErrNotExist)) {
			return err
		}
	}
	cg.limits = [2]int64{memory, pids}
	return nil
}

// V2Dir is the directory to pass as CgroupFD (v2 only; "" otherwise).
func (cg *Group) V2Dir() string {
	if cg == nil || cg.version != 2 {
		return ""
	}
	return cg.dirs[""]
}

// Attach moves pid in before the init reads its config, so before
// anything of the task runs, unless it was born there (v2 CgroupFD, v1
// CloneInside).
func (cg *Group) Attach(pid int, born bool) error {
	if cg == nil || born {
		return nil
	}
	for _, dir := range cg.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// NeedsAttach reports whether an init must be moved into the cgroup
// (Attach does something): when it was not born in it.
func (cg *Group) NeedsAttach(born bool) bool {
	return cg != nil && !born
}

// Empty reports whether no process is left in the cgroup.
func (cg *Group) Empty() bool {
	for _, dir := range cg.dirs {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(b))) != 0 {
			return false
		}
	}
	return true
}

// Remove deletes the cgroup, waiting briefly for exiting tasks to leave.
func (cg *Group) Remove() error {
	if cg == nil {
		return nil
	}
	cg.endTask()
	cg.kept.close()
	deadline := time.Now().Add(removeWait)
	var errs []error
	for _, dir := range cg.dirs {
		if err := removeDir(dir, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveDir deletes one cgroup directory that no Group holds (a dead
// worker's run cgroup), waiting briefly for exiting tasks to leave, as
// Remove does.
func RemoveDir(dir string) error {
	return removeDir(dir, time.Now().Add(removeWait))
}

// removeDir deletes dir, retrying until deadline while the kernel still
// counts a task in it.
func removeDir(dir string, deadline time.Time) error {
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(5 * time.Millisecond) // EBUSY while the last task exits
	}
}
