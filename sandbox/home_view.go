package sandbox

import (
	"os"

	"github.com/warrenhq/warren/sandbox/files"
)

// HomeView is a run's home as its command sees it, reached from the
// worker: the directory the command's $HOME is, whatever the mode (a host
// directory bound at its own path, a tmpfs mounted on the host, or one
// its init mounted in the sandbox's own mount namespace, as a template's
// task has).
type HomeView struct {
	// Dir is the path the worker opens the home at: its host directory,
	// or /proc/self/fd/<fd>/. of the descriptor the worker holds on a
	// home its init mounted (disk_quota.go). It is valid while the run
	// lasts: open it (sandbox/files) from Spec.HomeReady, the descriptor
	// then keeps it.
	Dir string
	// UID and GID are the sandbox's ids, the home's owner: new files must
	// be theirs. -1 when the worker is not root (its sandboxes run as its
	// own ids) or in mode none.
	UID, GID int
	// AsOwner says file operations must run with UID and GID as the
	// worker's filesystem ids rather than create as root and chown: the
	// home is a filesystem of the sandbox's user namespace, where root's
	// ids have no name (creating a file as root fails with EOVERFLOW).
	AsOwner bool
	// Quota is the home's disk limit (Limits.Disk) and what holds it
	// there: the home's own tmpfs (files.HeldByFilesystem), which refuses
	// the worker's writes as the command's; or, for a home the limit
	// asks for but no tmpfs bounds (a caller's Spec.Scratch, isolation
	// none), nothing in the kernel (files.HeldByCount): whoever writes
	// into it from the worker's side must count its usage
	// (files.Home.SetQuota). Zero Bytes: unbounded.
	Quota files.Quota
}

// homeView is b's home as its task sees it; limit is the run's
// Limits.Disk.
func (b *box) homeView(limit int64) HomeView {
	home := b.reached()
	v := HomeView{Dir: home.path, UID: -1, GID: -1, Quota: home.fileQuota(limit)}
	if os.Geteuid() == 0 {
		v.UID, v.GID = int(b.uid), int(b.gid)
		v.AsOwner = b.held != nil && b.uid != 0
	}
	return v
}

// homeReady hands b's home to spec.HomeReady once the task's files are in
// it and before the command runs; its error fails the run's setup.
func (b *box) homeReady(spec Spec) error {
	return callHomeReady(spec, b.homeView(spec.Limits.Disk))
}

// fileQuota is what holds s, a home of a run whose disk limit is limit,
// to that limit: its tmpfs when it has one (at its size: a warm home
// resized to the run's), else, with a limit, nothing but a count.
func (s *scratchDir) fileQuota(limit int64) files.Quota {
	switch {
	case s.quota != quotaNone:
		return files.Quota{Bytes: s.size, Holder: files.HeldByFilesystem}
	case limit > 0:
		return files.Quota{Bytes: limit, Holder: files.HeldByCount}
	}
	return files.Quota{}
}

func callHomeReady(spec Spec, v HomeView) error {
	if spec.HomeReady == nil {
		return nil
	}
	if err := spec.HomeReady(v); err != nil {
		return &SetupError{Step: "home ready", Path: v.Dir, Err: err}
	}
	return nil
}
