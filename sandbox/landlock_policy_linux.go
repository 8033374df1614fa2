package sandbox

import (
	"errors"
	"fmt"
	"slices"

	"github.com/warrenhq/warren/sandbox/initproc"
	"github.com/warrenhq/warren/sandbox/internal/seccomp"
)

// landlockMinABIDefault is the ABI floor: 6 brings TCP rules (4), device
// ioctl (5) and the abstract-socket and signal scopes (6).
const landlockMinABIDefault = 6

// landlockView describes what a sandbox may touch, with paths as the child
// sees them (inside the new root in the layered mode, host paths in the
// Landlock-only mode).
type landlockView struct {
	// Home is the sandbox's private home: every handled right.
	Home string
	// Writable are further sandbox-private writable trees (the layered
	// mode's private /tmp and /dev/shm). Never a host-shared directory.
	Writable []string
	// Toolchain are read + execute paths from the task's profile
	// (Spec.ReadOnly).
	Toolchain []string
	// Network none denies TCP connect; TCP bind is denied unless
	// OwnNetwork with loopback.
	Network Network
	// UnixSockets lets the task create AF_UNIX sockets (Spec.UnixSockets).
	UnixSockets bool
	// MinABI is the Landlock ABI floor; 0 means landlockMinABIDefault.
	MinABI int
	// OwnNetwork says the sandbox has its own network namespace (the
	// layered mode): with Network loopback its TCP listeners are its own,
	// so bind is allowed. Never set in the Landlock-only mode, whose
	// loopback is the host's.
	OwnNetwork bool
	// OwnIPC says the sandbox has an IPC namespace of its own (the
	// layered mode; the Landlock-only mode of a root worker): its SysV
	// IPC and POSIX message queues are private and die with it. Without
	// one the seccomp filter refuses them (they would be the host's).
	OwnIPC bool
	// PrivateRoot says / is the layered mode's private view (everything in
	// it is meant to be visible), so it may be listed. Never set in the
	// Landlock-only mode, where / is the host's root.
	PrivateRoot bool
}

// newLandlockPolicy builds the policy for a view: read + execute on the
// system dirs and toolchain, read-only /proc and the /etc allow-list, the
// safe /dev nodes, everything on the home (and private writable trees),
// listing (only) under a private view's root;
// TCP bind denied but in an own network namespace with loopback, TCP
// connect denied with network none; both scopes; the
// seccomp filter matching the network and unix-socket policy, refusing
// SysV IPC and POSIX message queues without an own IPC namespace.
func newLandlockPolicy(v landlockView) *landlockPolicy {
	minABI := v.MinABI
	if minABI == 0 {
		minABI = landlockMinABIDefault
	}
	none := v.Network != NetworkLoopback
	p := &landlockPolicy{
		MinABI:         minABI,
		ReadExec:       append(systemDirs(IsolationLandlock), v.Toolchain...),
		ReadOnly:       append([]string{"/proc"}, etcAllowList(IsolationLandlock)...),
		Devices:        slices.Clone(sandboxDevices),
		ReadWrite:      append([]string{v.Home}, v.Writable...),
		DenyTCPConnect: none,
		AllowTCPBind:   !none && v.OwnNetwork,
		Seccomp:        seccomp.Program(seccomp.Options{AllowInet: !none, AllowUnix: v.UnixSockets, RefuseIPC: !v.OwnIPC}),
	}
	if v.PrivateRoot {
		// READ_DIR only: `ls /` and `ls /dev` work; reading or executing a
		// file still needs one of the rules above.
		p.ListOnly = []string{"/"}
	}
	return p
}

// applyLandlock applies p to the calling process (initproc.ApplyLandlock,
// as the init does), reporting a *SetupError that wraps ErrUnavailable
// below the ABI floor. Used where this package's own binary applies a
// policy (tests).
func applyLandlock(p *landlockPolicy) error {
	err := initproc.ApplyLandlock(p)
	if err == nil {
		return nil
	}
	step, path, cause, ok := initproc.StepOf(err)
	if !ok {
		step, cause = "landlock", err
	}
	if errors.Is(cause, initproc.ErrLandlockABI) {
		// The worker's own check names what is missing and the fix.
		if rerr := landlockABI().require(p.MinABI); rerr != nil {
			cause = rerr
		} else {
			cause = fmt.Errorf("%w: %w", ErrUnavailable, cause)
		}
	}
	return &SetupError{Step: string(step), Path: path, Err: cause}
}
