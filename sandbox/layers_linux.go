package sandbox

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockPolicy is the Landlock ruleset (plus the seccomp filter that closes
// what Landlock leaves open) that the sandbox init applies right before
// exec, in both the Landlock-only and the layered mode. The host side builds
// it with newLandlockPolicy; applyLandlock enforces it in the child. Paths
// are as the child sees them (inside the new root in the layered mode).
type landlockPolicy struct {
	// MinABI is the lowest Landlock ABI accepted; below it applyLandlock
	// fails with ErrUnavailable instead of applying less.
	MinABI int `json:"min_abi"`
	// ReadExec may be read, listed and executed (system dirs, toolchains).
	ReadExec []string `json:"read_exec"`
	// ReadOnly may be read and listed, not executed (/proc, /etc files).
	ReadOnly []string `json:"read_only"`
	// Devices are device nodes that may be read, written and ioctl'd.
	Devices []string `json:"devices"`
	// ReadWrite get every handled right (the home; the private /tmp of the
	// layered mode).
	ReadWrite []string `json:"read_write"`
	// DenyTCPConnect denies TCP connect (network none). TCP bind is always
	// denied (ABI >= 4).
	DenyTCPConnect bool `json:"deny_tcp_connect"`
	// Seccomp is the socket-family and kernel-surface filter loaded after
	// the ruleset. Nil loads none (tests only; the runners always set it).
	Seccomp *seccompPolicy `json:"seccomp,omitempty"`
}

// landlockMinABIDefault is the ABI floor: 6 brings TCP rules (4), device
// ioctl (5) and the abstract-socket and signal scopes (6).
const landlockMinABIDefault = 6

// applyLandlock restricts the calling process, which must exec right after
// from the same goroutine: it locks the goroutine to its OS thread for good,
// sets NO_NEW_PRIVS, enforces the ruleset on that thread and loads the
// seccomp filter. execve keeps the calling thread's domain and filter, so
// the exec'd program is confined whole. It fails rather than apply less
// than the policy asks: below p.MinABI it returns an error wrapping
// ErrUnavailable.
func applyLandlock(p *landlockPolicy) error {
	if p == nil {
		return &SetupError{Step: "landlock", Err: errors.New("no policy")}
	}
	abi := landlockABI()
	if err := abi.require(p.MinABI); err != nil {
		return &SetupError{Step: "landlock abi", Err: err}
	}
	cfg, rules, err := p.ruleset(abi.Effective)
	if err != nil {
		return &SetupError{Step: "landlock ruleset", Err: err}
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return &SetupError{Step: "landlock create_ruleset", Err: err}
	}
	if fd < 0 {
		// Only reachable if the config handles nothing; never apply nothing.
		return &SetupError{Step: "landlock create_ruleset", Err: errors.New("empty ruleset")}
	}
	defer unix.Close(fd)

	// Never unlocked: the Go runtime then retires this restricted thread
	// instead of reusing it, and the exec must happen on it.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &SetupError{Step: "prctl no_new_privs", Err: err}
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return &SetupError{Step: "landlock restrict_self", Err: err}
	}
	if p.Seccomp != nil {
		if err := p.Seccomp.load(); err != nil {
			return &SetupError{Step: "seccomp", Err: err}
		}
	}
	return nil
}

// ruleset turns the policy into a go-landlock config handling every right
// the given ABI knows, and the rules that grant the policy's exceptions.
func (p *landlockPolicy) ruleset(abi int) (landlock.Config, []landlock.Rule, error) {
	cfg := landlockConfigFor(abi, p.DenyTCPConnect)
	fs := cfg.HandledAccessFS
	read := landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSReadDir)
	exec := read | ll.AccessFSExecute
	dev := fs & (ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)

	var rules []landlock.Rule
	for _, set := range []struct {
		paths  []string
		access landlock.AccessFSSet
		// optional paths may be missing (e.g. /lib32); the rest must exist.
		optional bool
	}{
		{p.ReadExec, exec, true},
		{p.ReadOnly, read, true},
		{p.Devices, dev, true},
		{p.ReadWrite, fs, false},
	} {
		for _, path := range set.paths {
			access, ok, err := fitAccess(path, set.access)
			if err != nil {
				if set.optional && errors.Is(err, unix.ENOENT) {
					continue
				}
				return landlock.Config{}, nil, err
			}
			if !ok {
				continue
			}
			rules = append(rules, landlock.PathAccess(access, path))
		}
	}
	return cfg, rules, nil
}

// fitAccess narrows access to the file rights when path is not a directory
// (the kernel rejects directory rights on a file rule).
func fitAccess(path string, access landlock.AccessFSSet) (landlock.AccessFSSet, bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, false, fmt.Errorf("landlock rule %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= landlockFileRights
	}
	return access, access != 0, nil
}

// landlockFileRights are the rights that apply to a non-directory (the
// kernel's ACCESS_FILE).
const landlockFileRights landlock.AccessFSSet = ll.AccessFSExecute | ll.AccessFSWriteFile |
	ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev | ll.AccessFSResolveUnix

// landlockConfigFor handles every filesystem right the ABI knows, TCP bind
// (and connect when denyConnect; UDP too at ABI >= 10) and both scopes.
func landlockConfigFor(abi int, denyConnect bool) landlock.Config {
	preset := landlockPresets[min(abi, len(landlockPresets)-1)]
	cfg := landlock.Config{
		HandledAccessFS: preset.HandledAccessFS,
		Scoped:          preset.Scoped,
	}
	if denyConnect {
		// Handled with no rule: every TCP (and, from ABI 10, UDP) bind and
		// connect is denied.
		cfg.HandledAccessNet = preset.HandledAccessNet
	} else {
		cfg.HandledAccessNet = preset.HandledAccessNet & ll.AccessNetBindTCP
	}
	return cfg
}

// landlockPresets indexes go-landlock's per-ABI presets by version.
var landlockPresets = []landlock.Config{
	{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}
