//go:build linux

package seccomppolicy

import (
	"fmt"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// IPProtoMPTCP is IPPROTO_MPTCP (not in x/sys/unix for every arch).
const IPProtoMPTCP = 262

// ipcSyscalls are SysV IPC (shared memory, message queues, semaphores)
// and POSIX message queues: kernel objects named by a key or a name in
// the IPC namespace, not files Landlock's rules govern.
var ipcSyscalls = []string{
	"shmget", "shmat", "shmctl", "shmdt",
	"msgget", "msgsnd", "msgrcv", "msgctl",
	"semget", "semop", "semtimedop", "semctl",
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
}

// filter is the policy for architecture info (refuseIPC: SysV IPC and
// POSIX message queues refused, for a sandbox without an IPC namespace
// of its own).
func filter(info *arch.Info, allowInet, allowUnix, refuseIPC bool) seccomp.Policy {
	// Deny a socket whose family is not allowed. NotEqual compares all 64
	// bits, so junk in the upper half makes a call denied, never allowed.
	var families []uint64
	if allowUnix {
		families = append(families, unix.AF_UNIX)
	}
	if allowInet {
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
	if allowInet {
		// The kernel truncates protocol to an int: deny MPTCP and any
		// upper-half junk that could smuggle it past an Equal test.
		socketRules = append(socketRules,
			seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 2, Operation: seccomp.Equal, Value: IPProtoMPTCP},
			}},
			seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 2, Operation: seccomp.GreaterThan, Value: 0xffffffff},
			}},
		)
	}
	groups := []seccomp.SyscallGroup{
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
			// personality(2) only with the values container runtimes'
			// default profiles allow: PER_LINUX, PER_LINUX32, each with
			// UNAME26, and the 0xffffffff query. The rest (say
			// ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC) weakens the
			// address-space hardening of what the task execs.
			// NotEqual compares all 64 bits: upper-half junk is refused.
			NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "personality", Conditions: personalityNotAllowed()},
			},
			Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
		},
		{
			// Keyrings are per uid (shared by the sandboxes of an
			// ordinary-user worker); the rest is kernel attack surface.
			Names:  []string{"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"},
			Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
		},
	}
	if refuseIPC {
		// Without an IPC namespace of its own the sandbox would share the
		// host's SysV IPC and POSIX message queues (those of other
		// sandboxes of the same uid included), and what it made there
		// would outlive it. ipc(2) multiplexes SysV IPC on the
		// architectures that have it.
		names := slices.Clone(ipcSyscalls)
		if _, ok := info.SyscallNames["ipc"]; ok {
			names = append(names, "ipc")
		}
		groups = append(groups, seccomp.SyscallGroup{
			Names:  names,
			Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
		})
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
}

// personalityAllowed are the personality(2) arguments the policy lets
// through (Docker's and containerd's default seccomp profiles allow the
// same): PER_LINUX, PER_LINUX32, UNAME26 with each, and the query
// 0xffffffff, which changes nothing.
var personalityAllowed = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// personalityNotAllowed matches an argument outside personalityAllowed.
func personalityNotAllowed() seccomp.ArgumentConditions {
	conds := make(seccomp.ArgumentConditions, 0, len(personalityAllowed))
	for _, v := range personalityAllowed {
		conds = append(conds, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: v})
	}
	return conds
}

// Instructions is the filter of the policy (allowInet: AF_INET and
// AF_INET6 sockets; allowUnix: AF_UNIX sockets; refuseIPC: no SysV IPC
// or POSIX message queues) for this architecture,
// behind an architecture guard: go-seccomp-bpf lets a foreign
// architecture (i386 int 0x80 on x86_64, where socketcall would bypass
// the socket rule) fall through to the default allow, so the guard kills
// it first.
func Instructions(allowInet, allowUnix, refuseIPC bool) ([]bpf.Instruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	pol := filter(info, allowInet, allowUnix, refuseIPC)
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

// Program is Instructions assembled, as the init loads it.
func Program(allowInet, allowUnix, refuseIPC bool) ([]bpf.RawInstruction, error) {
	insts, err := Instructions(allowInet, allowUnix, refuseIPC)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp assemble: %w", err)
	}
	return raw, nil
}
