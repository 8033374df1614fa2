package cgroup

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What the run's memory controller reports: its peak, its OOM kills, and
// the memory it holds now.

// PeakMemory is the run's peak memory use in bytes (0 when unknown).
func (cg *Group) PeakMemory() int64 {
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
func (cg *Group) readMemoryFile(v1, v2 string) ([]byte, error) {
	if cg == nil {
		return nil, os.ErrNotExist
	}
	if cg.version == 2 {
		return cg.kept.read(cg.keptPath("", v2))
	}
	return cg.kept.read(cg.keptPath("memory", v1))
}

// OOMKills is how many processes of the run the OOM killer killed (v1
// memory.oom_control oom_kill, v2 memory.events oom_kill, which counts
// the cgroup's descendants too); 0 without a cgroup or the counter.
func (cg *Group) OOMKills() int {
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

// Memory reads the run's unreclaimable memory from its cgroup, in bytes:
// v1 memory.stat total_rss + total_shmem + total_swap; v2 memory.stat
// anon + shmem, plus memory.swap.current. A missing stat file is an
// error.
func (cg *Group) Memory() (int64, error) {
	if cg.version == 1 {
		return statSum(filepath.Join(cg.dirs["memory"], "memory.stat"), "total_rss", "total_shmem", "total_swap")
	}
	n, err := statSum(filepath.Join(cg.dirs[""], "memory.stat"), "anon", "shmem")
	if err != nil {
		return 0, err
	}
	// Absent without swap accounting; the run's memory.swap.max is 0 anyway.
	if b, err := os.ReadFile(filepath.Join(cg.dirs[""], "memory.swap.current")); err == nil {
		s, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("memory.swap.current: %w", err)
		}
		n += s
	}
	return n, nil
}

// statSum adds the named "key value" lines of a cgroup stat file; keys
// missing from the file count as 0 (total_swap exists only with swap
// accounting).
func statSum(path string, keys ...string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return sumFields(b, " ", 1, keys...)
}

// sumFields adds the values of the lines of b whose first field (split
// on sep) is one of keys, each multiplied by unit. A malformed value is an
// error.
func sumFields(b []byte, sep string, unit int64, keys ...string) (int64, error) {
	var n int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if !ok || !slices.Contains(keys, k) {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", k, v, err)
		}
		n += x * unit
	}
	return n, sc.Err()
}
