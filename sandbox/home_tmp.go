package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// boundView puts a bounded home into the view: /tmp and /dev/shm become
// its directories .tmp and .shm (initproc.NSConfig.TmpIn, still noexec)
// instead of fresh tmpfs of Limits.TmpSize, so the disk limit covers them.
// A home its init mounts (quotaInit) is mounted and given them by the
// init (NSConfig.Home); a host-mounted one (quotaHost) gets them here. An
// unbounded home gets them too with tmpInHome (Spec.TmpInHome), so what
// the run writes there stays in the home after it.
func boundView(view *nsConfig, b *box, tmpInHome bool) error {
	switch {
	case b.home.quota == quotaInit:
		view.Home = &initproc.HomeQuota{Path: b.home.path, Size: b.home.size}
	case b.home.quota == quotaHost || tmpInHome:
		dirs := initproc.TmpInDirs()
		if err := makeHomeDirs(b.home.path, b.uid, b.gid, dirs[:]...); err != nil {
			return err
		}
		if !b.home.owned {
			// A caller's directory outlives the run: it gets back what the
			// run wrote in /tmp and /dev/shm, not what the view made there.
			made := tmpMade(view, b.home.path)
			undo := b.home.undo
			b.home.undo = func() error {
				made.prune()
				if undo == nil {
					return nil
				}
				return undo()
			}
		}
	default:
		return nil
	}
	view.TmpIn = b.home.path
	return nil
}

// madeEntry is an entry the init makes in a home's .tmp or .shm for the
// view: a mount point (a directory, or an empty file for a file bind), a
// parent of one, or a symlink (target set).
type madeEntry struct {
	path, target string
	dir, link    bool
}

type madeEntries []madeEntry

// tmpMade lists what the init makes in home's .tmp and .shm, bound at
// /tmp and /dev/shm, for what view has under them (binds, the home at its
// host path among them, and links), deepest first.
func tmpMade(view *nsConfig, home string) madeEntries {
	dirs := initproc.TmpInDirs()
	host := func(p string) (string, bool) {
		for i, in := range []string{"/tmp", "/dev/shm"} {
			if rel, ok := strings.CutPrefix(p, in+"/"); ok {
				return filepath.Join(home, dirs[i], rel), true
			}
		}
		return "", false
	}
	var made madeEntries
	seen := map[string]bool{}
	add := func(p string, e madeEntry) {
		h, ok := host(p)
		if !ok || seen[h] {
			return
		}
		seen[h] = true
		e.path = h
		made = append(made, e)
		for d := filepath.Dir(p); d != "/tmp" && d != "/dev/shm"; d = filepath.Dir(d) {
			if hd, ok := host(d); ok && !seen[hd] {
				seen[hd] = true
				made = append(made, madeEntry{path: hd, dir: true})
			}
		}
	}
	for _, b := range view.Binds {
		if initproc.UnderTmp(b.Source) {
			fi, err := os.Stat(b.Source)
			add(b.Source, madeEntry{dir: err != nil || fi.IsDir()})
		}
	}
	for _, l := range view.Symlinks {
		add(l.Path, madeEntry{link: true, target: l.Target})
	}
	sort.SliceStable(made, func(i, j int) bool {
		return strings.Count(made[i].path, "/") > strings.Count(made[j].path, "/")
	})
	return made
}

// prune removes the entries that are still as the init made them: empty
// directories, empty files, links to their target; anything else is the
// run's and stays.
func (m madeEntries) prune() {
	for _, e := range m {
		fi, err := os.Lstat(e.path)
		switch {
		case err != nil:
		case e.link && fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(e.path); err == nil && t == e.target {
				_ = os.Remove(e.path)
			}
		case e.dir && fi.IsDir():
			_ = unix.Rmdir(e.path) // only when empty
		case !e.dir && !e.link && fi.Mode().IsRegular() && fi.Size() == 0:
			_ = os.Remove(e.path)
		}
	}
}
