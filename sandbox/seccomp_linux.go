package sandbox

import (
	"fmt"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompPolicy closes what Landlock leaves open: socket families Landlock
// has no rules for (UDP, raw, netlink, packet, vsock... and, with network
// none, every inet socket), AF_UNIX sockets unless asked for (Landlock
// below ABI 9 does not govern connect on pathname sockets: the host's in
// /tmp, /run, /var/tmp would be reachable; socketpair stays allowed), MPTCP (which Landlock's TCP rules miss) and
// kernel surfaces shared between sandboxes of one uid or invisible to
// seccomp (keyrings, io_uring, bpf, perf, userfaultfd), and creating user
// namespaces (the largest kernel attack surface an unprivileged process
// can reach; namespace mode also caps them at 0 inside its own). It is a
// deny list over an allow default: anything not named here is the other
// layers' job.
type seccompPolicy struct {
	// AllowInet permits AF_INET and AF_INET6 sockets (network loopback).
	AllowInet bool `json:"allow_inet"`
	// AllowUnix permits AF_UNIX sockets (Spec.UnixSockets).
	AllowUnix bool `json:"allow_unix"`
}

// ipprotoMPTCP is IPPROTO_MPTCP (not in x/sys/unix for every arch).
const ipprotoMPTCP = 262

// filter builds the policy for this architecture.
func (s *seccompPolicy) filter() seccomp.Policy {
	// Deny a socket whose family is not allowed. NotEqual compares all 64
	// bits, so junk in the upper half makes a call denied, never allowed.
	var families []uint64
	if s.AllowUnix {
		families = append(families, unix.AF_UNIX)
	}
	if s.AllowInet {
		families = append(families, unix.AF_INET, unix.AF_INET6)
	}
	var socketRules []seccomp.NameWithConditions
	var denyAll []string // socket itself when no family is allowed
	if len(families) == 0 {
		denyAll = []string{"socket"}
	} else {
		notAllowed := make(seccomp.ArgumentConditions, 0, len(families))
		for _, f := range families {
			notAllowed = append(notAllowed, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: f})
		}
		socketRules = append(socketRules, seccomp.NameWithConditions{Name: "socket", Conditions: notAllowed})
	}
	if s.AllowInet {
		// The kernel truncates protocol to an int: deny MPTCP and any
		// upper-half junk that could smuggle it past an Equal test.
		socketRules = append(socketRules,
			seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 2, Operation: seccomp.Equal, Value: ipprotoMPTCP},
			}},
			seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 2, Operation: seccomp.GreaterThan, Value: 0xffffffff},
			}},
		)
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{
				Names:              denyAll,
				NamesWithCondtions: socketRules,
				Action:             seccomp.ActionErrno | seccomp.Action(unix.EAFNOSUPPORT),
			},
			{
				// io_uring creates sockets and opens files where seccomp
				// cannot see; callers fall back on ENOSYS.
				Names:  []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
			},
			{
				// No new user namespace: unshare or clone with
				// CLONE_NEWUSER. The flags are argument 0 of both on every
				// architecture Warren builds for (amd64, arm64; s390x
				// swaps clone's first two). BitsSet tests all 64 bits.
				NamesWithCondtions: []seccomp.NameWithConditions{
					{Name: "unshare", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_NEWUSER}}},
					{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_NEWUSER}}},
				},
				Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
			},
			{
				// clone3 passes its flags in memory, where seccomp cannot
				// look: ENOSYS makes glibc (pthread_create, posix_spawn,
				// fork) fall back to clone, which the rule above inspects.
				Names:  []string{"clone3"},
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
			},
			{
				// Keyrings are per uid (shared by the sandboxes of an
				// ordinary-user worker); the rest is kernel attack surface.
				Names:  []string{"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"},
				Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
			},
		},
	}
}

// program assembles the filter behind an architecture guard: go-seccomp-bpf
// lets a foreign architecture (i386 int 0x80 on x86_64, where socketcall
// would bypass the socket rule) fall through to the default allow, so the
// guard kills it first.
func (s *seccompPolicy) program() ([]bpf.RawInstruction, error) {
	insts, err := s.instructions()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp assemble: %w", err)
	}
	return raw, nil
}

// instructions is the guarded program before assembly (tests run it in a
// BPF interpreter).
func (s *seccompPolicy) instructions() ([]bpf.Instruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	pol := s.filter()
	insts, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp assemble: %w", err)
	}
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	return append(guard, insts...), nil
}

// assembled is the program as the init loads it, assembled once per
// policy (it only depends on the policy's fields and the architecture). An
// assembly error (a bug) yields an empty program, which the init refuses
// to load: it fails the run closed rather than run without the filter.
func (s *seccompPolicy) assembled() *initproc.Seccomp {
	if v, ok := assembledPolicies.Load(*s); ok {
		return v.(*initproc.Seccomp)
	}
	v, _ := assembledPolicies.LoadOrStore(*s, s.assemble())
	return v.(*initproc.Seccomp)
}

// assembledPolicies caches assembled programs by seccompPolicy value (a
// handful: one per combination of its booleans).
var assembledPolicies sync.Map

func (s *seccompPolicy) assemble() *initproc.Seccomp {
	raw, err := s.program()
	if err != nil {
		return &initproc.Seccomp{}
	}
	prog := make([]initproc.SockFilter, len(raw))
	for i, in := range raw {
		prog[i] = initproc.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return &initproc.Seccomp{Program: prog}
}
