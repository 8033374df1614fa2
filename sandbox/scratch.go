package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/warrenhq/warren/sandbox/files"
)

// scratchDir is a run's scratch directory: the only writable host path.
type scratchDir struct {
	path  string
	owned bool         // created for this run, removed at teardown
	quota diskQuota    // where the tmpfs bounding it is mounted, if any (disk_quota.go)
	size  int64        // that tmpfs's size, bytes
	undo  func() error // restores a caller's directory lent to the sandbox uid
}

// newScratch creates a fresh scratch directory, or resolves the caller's.
func (r *Runner) newScratch(caller string) (scratchDir, error) {
	s := scratchDir{undo: func() error { return nil }}
	if caller != "" {
		p, err := filepath.Abs(caller)
		if err == nil {
			p, err = filepath.EvalSymlinks(p)
		}
		if err != nil {
			return s, &SetupError{Step: "resolve scratch", Path: caller, Err: err}
		}
		s.path = p
		return s, nil
	}
	dir, err := os.MkdirTemp(r.cfg.ScratchRoot, scratchPrefix())
	if err != nil {
		return s, &SetupError{Step: "create scratch", Path: r.cfg.ScratchRoot, Err: err}
	}
	s.path, s.owned = dir, true
	return s, nil
}

// fill writes spec.Files and the Cwd into the scratch directory and, as
// root, hands the whole tree to the sandbox uid. It never follows a link
// found in the directory.
func (s *scratchDir) fill(spec Spec, uid, gid uint32) error {
	if err := s.write(spec); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	if !s.owned {
		// A caller's directory: lend it to the sandbox uid for the run and
		// give everything in it back afterwards.
		fi, err := os.Stat(s.path)
		if err != nil {
			return &SetupError{Step: "stat scratch", Path: s.path, Err: err}
		}
		st := fi.Sys().(*syscall.Stat_t)
		path := s.path
		s.undo = func() error { return chownTree(path, int(st.Uid), int(st.Gid)) }
	}
	if err := chownTree(s.path, int(uid), int(gid)); err != nil {
		return &SetupError{Step: "chown scratch", Path: s.path, Err: err}
	}
	return nil
}

// write writes spec.Files and the Cwd into the scratch directory, owned
// by whoever writes them (fill hands them to the sandbox uid; a template's
// worker writes them as that uid already).
func (s *scratchDir) write(spec Spec) error {
	// Held by the home's tmpfs, if any: a caller's directory keeps the
	// files it is given.
	if err := writeFiles(s.path, s.fileQuota(0), spec.Files); err != nil {
		return err
	}
	if spec.Cwd != "" {
		root, err := os.OpenRoot(s.path)
		if err == nil {
			err = root.MkdirAll(spec.Cwd, 0o755)
			_ = root.Close()
		}
		if err != nil {
			return &SetupError{Step: "create cwd", Path: spec.Cwd, Err: err}
		}
	}
	return nil
}

// cleanup removes an owned scratch directory, or gives a caller's back.
func (s scratchDir) cleanup() error {
	if !s.owned {
		if s.undo == nil {
			return nil // never lent
		}
		return s.undo()
	}
	if s.path == "" {
		return nil
	}
	if err := s.unmountQuota(); err != nil {
		return err
	}
	if err := os.RemoveAll(s.path); err == nil {
		return nil
	}
	// The task may have left unwritable directories (chmod 0): an ordinary
	// user must make them writable to empty them.
	_ = filepath.WalkDir(s.path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(s.path)
}

// makeHomeDirs creates the directories names (0700, owned by the sandbox
// uid) in the home at dir: the Landlock mode's TMPDIR, the /tmp and
// /dev/shm of a bounded (or Spec.TmpInHome) namespace-mode home. One that
// is not a directory (a task's leftover in a caller's reused directory)
// is no bind source: the init refuses it (a symlink) or its bind fails.
func makeHomeDirs(dir string, uid, gid uint32, names ...string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return &SetupError{Step: "create " + n, Path: p, Err: err}
		}
		if err := os.Lchown(p, int(uid), int(gid)); err != nil {
			return &SetupError{Step: "chown " + n, Path: p, Err: err}
		}
	}
	return nil
}

// chownTree lchowns dir and everything under it, following no symlink.
func chownTree(dir string, uid, gid int) error {
	var errs []error
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// writeFiles writes files under dir through the files API: paths are
// rooted at dir, no symlink, FIFO, device or hard link is followed, and
// a write past q fails with the limit it passes (files.ErrDiskFull).
func writeFiles(dir string, q files.Quota, fs map[string][]byte) error {
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	home, err := files.Open(dir, files.NoOwner)
	if err != nil {
		return &SetupError{Step: "open scratch", Path: dir, Err: err}
	}
	defer home.Close()
	home.SetQuota(q)
	for _, n := range names {
		if _, err := home.Write(context.Background(), n, fs[n], files.WriteOptions{Parents: true}); err != nil {
			return &SetupError{Step: "write files", Path: n, Err: err}
		}
	}
	return nil
}
