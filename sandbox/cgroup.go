package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cgroupMount is where the host's cgroup hierarchies are mounted.
const cgroupMount = "/sys/fs/cgroup"

// cgroupSupport says which cgroup interface the runner can use for memory
// and pids limits. Each run gets a child cgroup under the worker's own, so
// limits set on the worker still bound its sandboxes.
type cgroupSupport struct {
	Version int    // 1, 2, or 0 when unusable
	Why     string // when Version is 0: the reason
	// parents maps a v1 controller (or "" for v2) to the worker's own
	// cgroup directory.
	parents map[string]string
	// threadMove: v1, and a thread of this process can move itself into
	// parents (so it can step into a run's cgroups and back to clone an
	// init there: cgroup_v1_born.go).
	threadMove bool
}

func (c cgroupSupport) String() string {
	switch c.Version {
	case 1:
		return "cgroup v1 (memory, pids)"
	case 2:
		return "cgroup v2 (memory, pids)"
	}
	return "rlimits only (" + c.Why + ")"
}

// detectCgroups finds a usable cgroup interface: one where this process
// can create a child cgroup with memory and pids controllers.
func detectCgroups() cgroupSupport {
	own, err := ownCgroups()
	if err != nil {
		return cgroupSupport{Why: "reading /proc/self/cgroup: " + err.Error()}
	}
	if b, err := os.ReadFile(filepath.Join(cgroupMount, "cgroup.controllers")); err == nil {
		ctrl := strings.Fields(string(b))
		if !slices.Contains(ctrl, "memory") || !slices.Contains(ctrl, "pids") {
			return cgroupSupport{Why: "cgroup v2 without the memory and pids controllers"}
		}
		dir := filepath.Join(cgroupMount, own[""])
		if err := probeWritable(dir); err != nil {
			return cgroupSupport{Why: "cgroup v2 not delegated to this user: " + err.Error()}
		}
		if err := enableV2Controllers(dir); err != nil {
			return cgroupSupport{Why: "cgroup v2: cannot enable memory and pids for children of " + dir +
				" (" + err.Error() + "); run the worker in a delegated cgroup whose own processes live in a leaf (systemd Delegate=yes)"}
		}
		return cgroupSupport{Version: 2, parents: map[string]string{"": dir}}
	}
	parents := map[string]string{}
	for _, c := range []string{"memory", "pids"} {
		dir := filepath.Join(cgroupMount, c, own[c])
		if _, err := os.Stat(dir); err != nil {
			return cgroupSupport{Why: "cgroup v1 " + c + " controller not mounted"}
		}
		if err := probeWritable(dir); err != nil {
			return cgroupSupport{Why: "cgroup v1 " + c + " not writable by this user: " + err.Error()}
		}
		parents[c] = dir
	}
	return cgroupSupport{Version: 1, parents: parents, threadMove: v1ThreadMove(parents)}
}

// enableV2Controllers makes memory and pids available to dir's children.
// The kernel refuses (EBUSY) when dir itself holds processes and is not the
// root: a worker must then run in a leaf of a delegated subtree.
func enableV2Controllers(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(b))
	if slices.Contains(have, "memory") && slices.Contains(have, "pids") {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids"), 0)
}

func probeWritable(dir string) error {
	d, err := os.MkdirTemp(dir, "warren-probe-")
	if err != nil {
		return err
	}
	return os.Remove(d)
}

// ownCgroups maps controller -> this process's cgroup path ("" for v2).
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m, sc.Err()
}

// runCgroup is one run's cgroup (one directory per v1 controller).
type runCgroup struct {
	version int
	dirs    map[string]string
	// parents and threadMove: the cgroupSupport's (cgroup_v1_born.go).
	parents    map[string]string
	threadMove bool
	// A slot's task counters (cgroup_slot.go): the OOM kills before the
	// task, and v2's memory.peak as reset for the task (peakUnknown: the
	// reset is refused, no peak is read).
	oomBase     int
	peakFile    *os.File
	peakUnknown bool
	// limits are the memory and pids limits last written (zero: none).
	limits [2]int64
	// kept are its counter files, open (cgroup_files.go).
	kept keptFiles
}

func (c cgroupSupport) create(name string, memory, pids int64) (*runCgroup, error) {
	if c.Version == 0 {
		return nil, nil
	}
	cg := &runCgroup{version: c.Version, dirs: map[string]string{}, parents: c.parents, threadMove: c.threadMove}
	for ctrl, parent := range c.parents {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			return nil, err
		}
		cg.dirs[ctrl] = dir
	}
	if err := cg.setLimits(memory, pids); err != nil {
		cg.remove()
		return nil, err
	}
	return cg, nil
}

// setLimits writes the memory and pids limits (a warm sandbox's cgroup
// gets the task's own when the task arrives).
func (cg *runCgroup) setLimits(memory, pids int64) error {
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

// v2Dir is the directory to pass as CgroupFD (v2 only).
func (cg *runCgroup) v2Dir() string {
	if cg == nil || cg.version != 2 {
		return ""
	}
	return cg.dirs[""]
}

// attach moves pid in before the init reads its config, so before
// anything of the task runs, unless it was born there (v2 CgroupFD, v1
// cloneInside).
func (cg *runCgroup) attach(pid int, born bool) error {
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

// needsAttach reports whether an init must be moved into the cgroup
// (attach does something): when it was not born in it.
func (cg *runCgroup) needsAttach(born bool) bool {
	return cg != nil && !born
}

// peakMemory is the run's peak memory use in bytes (0 when unknown).
func (cg *runCgroup) peakMemory() int64 {
	if cg == nil || cg.peakUnknown {
		return 0
	}
	b, err := cg.readMemoryFile("memory.max_usage_in_bytes", "memory.peak")
	if cg.peakFile != nil {
		b, err = readAt0(cg.peakFile)
	}
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// readMemoryFile reads a file of the run's memory controller: v1 names
// it one way, v2 another.
func (cg *runCgroup) readMemoryFile(v1, v2 string) ([]byte, error) {
	if cg == nil {
		return nil, os.ErrNotExist
	}
	if cg.version == 2 {
		return cg.kept.read(cg.keptPath("", v2))
	}
	return cg.kept.read(cg.keptPath("memory", v1))
}

// empty reports whether no process is left in the cgroup.
func (cg *runCgroup) empty() bool {
	for _, dir := range cg.dirs {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(b))) != 0 {
			return false
		}
	}
	return true
}

// remove deletes the cgroup, waiting briefly for exiting tasks to leave.
func (cg *runCgroup) remove() error {
	if cg == nil {
		return nil
	}
	cg.endTask()
	cg.kept.close()
	deadline := time.Now().Add(2 * time.Second)
	var errs []error
	for _, dir := range cg.dirs {
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
				break
			}
			time.Sleep(5 * time.Millisecond) // EBUSY while the last task exits
		}
	}
	return errors.Join(errs...)
}

// oomKills is how many processes of the run the OOM killer killed (v1
// memory.oom_control oom_kill, v2 memory.events oom_kill, which counts
// the cgroup's descendants too); 0 without a cgroup or the counter.
func (cg *runCgroup) oomKills() int {
	b, err := cg.readMemoryFile("memory.oom_control", "memory.events")
	if err != nil {
		return 0
	}
	n, err := sumFields(b, " ", 1, "oom_kill")
	if err != nil {
		return 0
	}
	return int(n) - cg.oomBase
}

// readAt0 reads a small cgroup file through an open descriptor.
func readAt0(f *os.File) ([]byte, error) {
	b := make([]byte, 64)
	n, err := f.ReadAt(b, 0)
	if n > 0 {
		err = nil
	}
	return b[:n], err
}
