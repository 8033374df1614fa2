package initproc

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Landlock is the Landlock ruleset (plus the seccomp filter that closes
// what Landlock leaves open) that the sandbox init applies right before
// exec, in both the Landlock-only and the layered mode. The host side builds
// it (sandbox.newLandlockPolicy); ApplyLandlock enforces it in the child. Paths
// are as the child sees them (inside the new root in the layered mode).
type Landlock struct {
	// MinABI is the lowest Landlock ABI accepted; below it ApplyLandlock
	// fails with ErrLandlockABI instead of applying less.
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
	// ListOnly may be listed (READ_DIR) and nothing more: the root of the
	// layered mode's private view, whose whole content is the allow-list.
	ListOnly []string `json:"list_only,omitempty"`
	// DenyTCPConnect denies TCP connect (network none). TCP bind is
	// denied (ABI >= 4) unless AllowTCPBind.
	DenyTCPConnect bool `json:"deny_tcp_connect"`
	// AllowTCPBind leaves TCP bind and connect to the network namespace:
	// set only when the sandbox has its own (a listener on its loopback
	// is reachable from inside it alone). Never with DenyTCPConnect.
	AllowTCPBind bool `json:"allow_tcp_bind,omitempty"`
	// Seccomp is the socket-family and kernel-surface filter loaded after
	// the ruleset, assembled by the worker. Nil loads none (tests only; the
	// runners always set it).
	Seccomp *Seccomp `json:"seccomp,omitempty"`
}

// ErrLandlockABI means the kernel's effective Landlock ABI is below the
// policy's MinABI: the init refuses rather than apply less.
var ErrLandlockABI = errors.New("landlock ABI below the required minimum")

// ApplyLandlock restricts the calling process, which must exec right after
// from the same goroutine: it locks the goroutine to its OS thread for good,
// sets NO_NEW_PRIVS, enforces the ruleset on that thread and loads the
// seccomp filter. execve keeps the calling thread's domain and filter, so
// the exec'd program is confined whole. It fails rather than apply less
// than the policy asks: below p.MinABI with an error wrapping
// ErrLandlockABI. Errors name the step (StepOf).
func ApplyLandlock(p *Landlock) error {
	r, err := PrepareLandlock(p)
	if err != nil {
		return err
	}
	return r.Apply()
}

// PreparedLandlock is a policy's ruleset built but not yet enforced: a
// warm sandbox builds it before its task arrives (the ~30 path opens and
// rule calls are then off the task's critical path) and enforces it only
// for a task whose policy is the same (Matches).
type PreparedLandlock struct {
	policy *Landlock
	fd     int
	flags  uint32
}

// PrepareLandlock checks the ABI floor and builds p's ruleset. The caller
// must Apply or Close it.
func PrepareLandlock(p *Landlock) (*PreparedLandlock, error) {
	if p == nil {
		return nil, fail("landlock", "", errors.New("no policy"))
	}
	minABI := p.MinABI
	if minABI < 1 {
		minABI = 6 // the worker's default floor
	}
	abi := LandlockABI()
	if abi < minABI {
		return nil, fail("landlock abi", "", fmt.Errorf("%w: effective ABI %d, minimum %d", ErrLandlockABI, abi, minABI))
	}
	cfg, rules, err := p.ruleset(abi)
	if err != nil {
		return nil, fail("landlock ruleset", "", err)
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return nil, fail("landlock create_ruleset", "", err)
	}
	if fd < 0 {
		// Only reachable if the config handles nothing; never apply nothing.
		return nil, fail("landlock create_ruleset", "", errors.New("empty ruleset"))
	}
	return &PreparedLandlock{policy: p, fd: fd, flags: flags}, nil
}

// Matches reports whether p is the policy this ruleset was built from
// (every path, right, floor and seccomp instruction equal).
func (r *PreparedLandlock) Matches(p *Landlock) bool {
	return r != nil && p != nil && reflect.DeepEqual(r.policy, p)
}

// Close releases an unused ruleset.
func (r *PreparedLandlock) Close() {
	if r != nil && r.fd >= 0 {
		_ = unix.Close(r.fd)
		r.fd = -1
	}
}

// Apply enforces the ruleset and the policy's seccomp filter on the
// calling thread (see ApplyLandlock) and closes the ruleset.
func (r *PreparedLandlock) Apply() error {
	defer r.Close()
	p, fd, flags := r.policy, r.fd, r.flags
	// Never unlocked: the Go runtime then retires this restricted thread
	// instead of reusing it, and the exec must happen on it.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("prctl no_new_privs", "", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fail("landlock restrict_self", "", err)
	}
	if p.Seccomp != nil {
		if err := p.Seccomp.load(); err != nil {
			return fail("seccomp", "", err)
		}
	}
	return nil
}

// LandlockErratumSignalScope is the errata bit of the ABI 6 signal-scoping
// fix; without it the signal scope cannot be trusted.
const LandlockErratumSignalScope = 1 << 1

// EffectiveABI is the ABI warren relies on: the kernel's, lowered to 5 when
// ABI 6 lacks the signal-scoping fix (erratum 2), as go-landlock does.
func EffectiveABI(kernel, errata int) int {
	if kernel >= 6 && errata&LandlockErratumSignalScope == 0 {
		return 5
	}
	return kernel
}

// LandlockABI is the running kernel's effective ABI (0: no Landlock).
func LandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	errata, err := ll.LandlockGetErrata()
	if err != nil {
		errata = 0 // pretend none is fixed
	}
	return EffectiveABI(v, errata)
}

// Seccomp is an assembled classic-BPF seccomp program.
type Seccomp struct {
	Program []SockFilter `json:"program"`
}

// SockFilter is one BPF instruction (struct sock_filter).
type SockFilter struct {
	Code uint16 `json:"c"`
	Jt   uint8  `json:"t,omitempty"`
	Jf   uint8  `json:"f,omitempty"`
	K    uint32 `json:"k,omitempty"`
}

// load installs the filter on the calling thread (which must have
// NO_NEW_PRIVS and exec next; execve keeps the thread's filter). An empty
// program is an error: a filter that failed to assemble never loads as
// nothing.
func (s *Seccomp) load() error {
	if len(s.Program) == 0 || len(s.Program) > 0xffff {
		return errors.New("seccomp: empty or oversized program")
	}
	filter := make([]unix.SockFilter, len(s.Program))
	for i, in := range s.Program {
		filter[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}

// ruleset turns the policy into a go-landlock config handling every right
// the given ABI knows, and the rules that grant the policy's exceptions.
func (p *Landlock) ruleset(abi int) (landlock.Config, []landlock.Rule, error) {
	cfg := landlockConfigFor(abi, p.DenyTCPConnect, p.AllowTCPBind)
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
		{p.ListOnly, landlock.AccessFSSet(ll.AccessFSReadDir), false},
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

// landlockConfigFor handles every filesystem right the ABI knows, both
// scopes, and of the network: TCP bind and connect when denyConnect (UDP
// too at ABI >= 10), else TCP bind unless allowBind (the sandbox's own
// network namespace decides then).
func landlockConfigFor(abi int, denyConnect, allowBind bool) landlock.Config {
	preset := landlockPresets[min(abi, len(landlockPresets)-1)]
	cfg := landlock.Config{
		HandledAccessFS: preset.HandledAccessFS,
		Scoped:          preset.Scoped,
	}
	switch {
	case denyConnect:
		// Handled with no rule: every TCP (and, from ABI 10, UDP) bind and
		// connect is denied.
		cfg.HandledAccessNet = preset.HandledAccessNet
	case allowBind:
	default:
		cfg.HandledAccessNet = preset.HandledAccessNet & ll.AccessNetBindTCP
	}
	return cfg
}

// landlockPresets indexes go-landlock's per-ABI presets by version.
var landlockPresets = []landlock.Config{
	{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
	landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}
