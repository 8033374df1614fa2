package sandbox

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// sweepStale removes the scratch directories (in each of sweepRoots) and
// cgroups of dead owners. It is best effort: what cannot be removed is
// logged and left.
func (r *Runner) sweepStale() {
	n := 0
	for _, root := range r.sweepRoots() {
		ents, err := os.ReadDir(root)
		if err != nil {
			r.log.Warn().Err(err).Str("path", root).Msg("sweeping stale sandboxes: reading the scratch root")
		}
		for _, e := range ents {
			if !e.IsDir() || !deadOwner(e.Name()) {
				continue
			}
			// A root worker's home tmpfs (disk_quota.go) outlives its
			// SIGKILL: unmount it (not a mount point: EINVAL, ignored).
			s := nsScratch{path: filepath.Join(root, e.Name()), owned: true, quota: os.Geteuid() == 0}
			if err := s.cleanup(); err != nil {
				r.log.Warn().Err(err).Str("path", s.path).Msg("removing a stale scratch directory")
				continue
			}
			n++
		}
	}
	for _, parent := range r.ns.cgroups.parents {
		ents, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name, ok := staleCgroupName(e)
			if !ok || !deadOwner(name) {
				continue
			}
			dir := filepath.Join(parent, e.Name())
			killCgroup(dir)
			cg := &runCgroup{dirs: map[string]string{"": dir}}
			if err := cg.remove(); err != nil {
				r.log.Warn().Err(err).Str("path", dir).Msg("removing a stale cgroup")
				continue
			}
			n++
		}
	}
	if n > 0 {
		r.log.Info().Int("removed", n).Msg("swept scratch directories and cgroups left by dead workers")
	}
}

// staleCgroupName strips the run-cgroup prefixes ("warren-" namespace
// mode, "ll-" Landlock mode) off a cgroup directory entry.
func staleCgroupName(e fs.DirEntry) (string, bool) {
	if !e.IsDir() {
		return "", false
	}
	for _, p := range []string{"warren-", "ll-"} {
		if rest, ok := strings.CutPrefix(e.Name(), p); ok {
			return rest, true
		}
	}
	return "", false
}

// killCgroup SIGKILLs whatever is still in a stale cgroup (normally
// nothing: the owner's death killed its sandboxes).
func killCgroup(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
