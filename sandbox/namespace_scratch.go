package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// nsScratch is a run's scratch directory: the only writable host path.
type nsScratch struct {
	path  string
	owned bool         // created for this run, removed at teardown
	quota bool         // a home tmpfs is mounted on it (disk_quota.go)
	undo  func() error // restores a caller's directory lent to the sandbox uid
}

// nsScratch creates the scratch directory (or takes spec.Scratch), writes
// spec.Files into it, and hands it to the sandbox uid.
func (r *Runner) nsScratch(spec Spec, q diskQuota, uid, gid uint32) (nsScratch, error) {
	s, err := r.newScratch(spec.Scratch)
	if err != nil {
		return s, err
	}
	if err := s.applyQuota(q, spec.Limits.Disk, uid, gid); err != nil {
		_ = s.cleanup()
		return s, err
	}
	if q == quotaInit {
		return s, nil // filled inside the init's tmpfs (launchInitQuota)
	}
	if err := s.fill(spec, uid, gid); err != nil {
		_ = s.cleanup()
		return s, err
	}
	return s, nil
}

// newScratch creates a fresh scratch directory, or resolves the caller's.
func (r *Runner) newScratch(caller string) (nsScratch, error) {
	s := nsScratch{undo: func() error { return nil }}
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
func (s *nsScratch) fill(spec Spec, uid, gid uint32) error {
	if err := writeFiles(s.path, spec.Files); err != nil {
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

func (s nsScratch) cleanup() error {
	if !s.owned {
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
