package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/warrenhq/warren/sandbox/internal/cgroup"
)

// sweepStale removes the scratch directories (in each of sweepRoots) and
// cgroups of dead owners. It is best effort: what cannot be removed is
// logged and left.
func (r *Runner) sweepStale() {
	n := 0
	for _, root := range sweepRoots(r.cfg.ScratchRoot, r.defaultRoot) {
		ents, err := os.ReadDir(root)
		if err != nil {
			r.log.Warn().Err(err).Str("path", root).Msg("sweeping stale sandboxes: reading the scratch root")
		}
		for _, e := range ents {
			if !e.IsDir() || !deadOwner(e.Name()) {
				continue
			}
			s := scratchDir{path: filepath.Join(root, e.Name()), owned: true}
			if os.Geteuid() == 0 {
				// A root worker's home tmpfs (disk_quota.go) outlives its
				// SIGKILL: unmount it (not a mount point: EINVAL, ignored).
				s.quota = quotaHost
			}
			if err := s.cleanup(); err != nil {
				r.log.Warn().Err(err).Str("path", s.path).Msg("removing a stale scratch directory")
				continue
			}
			n++
		}
	}
	for _, parent := range r.cgroups.Parents() {
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
			if err := cgroup.RemoveDir(dir); err != nil {
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

// staleCgroupName strips a run-cgroup prefix (cgroupPrefixes) off a
// cgroup directory entry.
func staleCgroupName(e fs.DirEntry) (string, bool) {
	if !e.IsDir() {
		return "", false
	}
	for _, p := range cgroupPrefixes {
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
