package sandbox

import "os"

// HomeView is a run's home as its command sees it, reached from the
// worker: the directory the command's $HOME is, whatever the mode (a host
// directory bound at its own path, a tmpfs mounted on the host, or one
// its init mounted in the sandbox's own mount namespace, as a slot's task
// has).
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
}

// homeView is b's home as its task sees it.
func (b *box) homeView() HomeView {
	v := HomeView{Dir: b.reached().path, UID: -1, GID: -1}
	if os.Geteuid() == 0 {
		v.UID, v.GID = int(b.uid), int(b.gid)
		v.AsOwner = b.held != nil && b.uid != 0
	}
	return v
}

// homeReady hands b's home to spec.HomeReady once the task's files are in
// it and before the command runs; its error fails the run's setup.
func (b *box) homeReady(spec Spec) error {
	return callHomeReady(spec, b.homeView())
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
