package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
)

// A worker killed by SIGKILL takes its sandboxes' processes with it
// (Pdeathsig) but leaves their scratch directories and cgroups: nobody is
// left to remove them. So everything a Runner creates on the host is named
// after its owner, the worker process (pid and start time, since pids are
// reused), and a new Runner sweeps what dead owners left in its scratch
// root and under its cgroups.

// scratchNamePrefix starts every scratch directory's name; the owner tag
// and a random suffix follow.
const scratchNamePrefix = "run-"

// ownerTag is "<pid>.<start time in clock ticks>" of this process.
var ownerTag = sync.OnceValue(func() string {
	st, _ := processStart(os.Getpid())
	return strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(st, 10)
})

// scratchPrefix is the os.MkdirTemp pattern of this process's scratch
// directories.
func scratchPrefix() string { return scratchNamePrefix + ownerTag() + "-" }

// processStart is field 22 of /proc/<pid>/stat: the start time, which
// tells a live owner from a later process that reuses its pid.
func processStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may contain spaces and parentheses: fields start
	// after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return st, err == nil
}

// deadOwner reports whether name (a scratch directory or cgroup name,
// after its prefix) carries the tag of a process that no longer runs.
// Names without a tag (not ours, or from an older version) never are.
func deadOwner(name string) bool {
	rest, ok := strings.CutPrefix(name, scratchNamePrefix)
	if !ok {
		return false
	}
	tag, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	pidStr, stStr, ok := strings.Cut(tag, ".")
	if !ok {
		return false
	}
	pid, err1 := strconv.Atoi(pidStr)
	st, err2 := strconv.ParseUint(stStr, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	now, alive := processStart(pid)
	return !alive || now != st
}
