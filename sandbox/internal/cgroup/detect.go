package cgroup

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// mountPoint is where the host's cgroup hierarchies are mounted.
const mountPoint = "/sys/fs/cgroup"

// Support says which cgroup interface the runner can use for memory and
// pids limits. Each run gets a child cgroup under the worker's own, so
// limits set on the worker still bound its sandboxes.
type Support struct {
	Version int    // 1, 2, or 0 when unusable
	Why     string // when Version is 0: the reason
	// parents maps a v1 controller (or "" for v2) to the worker's own
	// cgroup directory.
	parents map[string]string
	// threadMove: v1, and a thread of this process can move itself into
	// parents (so it can step into a run's cgroups and back to clone an
	// init there: v1_born.go).
	threadMove bool
}

// String names the interface ("cgroup v1 (memory, pids)"), or says
// "rlimits only (why)" when there is none: the limits then fall back to
// per-process rlimits.
func (c Support) String() string {
	switch c.Version {
	case 1:
		return "cgroup v1 (memory, pids)"
	case 2:
		return "cgroup v2 (memory, pids)"
	}
	return "rlimits only (" + c.Why + ")"
}

// Parents maps each controller in use (v1: "memory", "pids"; v2: "") to
// the worker's own cgroup directory, where run cgroups are created; empty
// when Version is 0. The map is a copy.
func (c Support) Parents() map[string]string {
	return maps.Clone(c.parents)
}

// Detect finds a usable cgroup interface: one where this process can
// create a child cgroup with memory and pids controllers.
func Detect() Support {
	own, err := ownCgroups()
	if err != nil {
		return Support{Why: "reading /proc/self/cgroup: " + err.Error()}
	}
	if b, err := os.ReadFile(filepath.Join(mountPoint, "cgroup.controllers")); err == nil {
		ctrl := strings.Fields(string(b))
		if !slices.Contains(ctrl, "memory") || !slices.Contains(ctrl, "pids") {
			return Support{Why: "cgroup v2 without the memory and pids controllers"}
		}
		dir := filepath.Join(mountPoint, own[""])
		if err := probeWritable(dir); err != nil {
			return Support{Why: "cgroup v2 not delegated to this user: " + err.Error()}
		}
		if err := enableV2Controllers(dir); err != nil {
			return Support{Why: "cgroup v2: cannot enable memory and pids for children of " + dir +
				" (" + err.Error() + "); run the worker in a delegated cgroup whose own processes live in a leaf (systemd Delegate=yes)"}
		}
		return Support{Version: 2, parents: map[string]string{"": dir}}
	}
	parents := map[string]string{}
	for _, c := range []string{"memory", "pids"} {
		dir := filepath.Join(mountPoint, c, own[c])
		if _, err := os.Stat(dir); err != nil {
			return Support{Why: "cgroup v1 " + c + " controller not mounted"}
		}
		if err := probeWritable(dir); err != nil {
			return Support{Why: "cgroup v1 " + c + " not writable by this user: " + err.Error()}
		}
		parents[c] = dir
	}
	return Support{Version: 1, parents: parents, threadMove: v1ThreadMove(parents)}
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
