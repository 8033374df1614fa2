package seccomp

import (
	"sync"

	"github.com/warrenhq/warren/sandbox/initproc"
)

// Options choose the filter a sandbox's init loads. The filter closes
// what Landlock leaves open: socket families Landlock
// has no rules for (UDP, raw, netlink, packet, vsock... and, with network
// none, every inet socket), AF_UNIX sockets unless asked for (Landlock
// below ABI 9 does not govern connect on pathname sockets: the host's in
// /tmp, /run, /var/tmp would be reachable; socketpair stays allowed), MPTCP (which Landlock's TCP rules miss) and
// kernel surfaces shared between sandboxes of one uid or invisible to
// seccomp (keyrings, io_uring, bpf, perf, userfaultfd), and creating user
// namespaces (the largest kernel attack surface an unprivileged process
// can reach; namespace mode also caps them at 0 inside its own), and,
// where the sandbox has no IPC namespace (RefuseIPC), SysV IPC and POSIX
// message queues. It is a
// deny list over an allow default: anything not named here is the other
// layers' job. ptrace stays allowed, PTRACE_TRACEME included: debuggers
// need it, and the worker and slot parents reap what a task makes them
// trace (sandbox/doc.go, "The end of a task"), which a filter could not
// cover in the namespace mode alone anyway.
type Options struct {
	// AllowInet permits AF_INET and AF_INET6 sockets (network loopback).
	AllowInet bool
	// AllowUnix permits AF_UNIX sockets (Spec.UnixSockets).
	AllowUnix bool
	// RefuseIPC refuses SysV IPC (shm*, msg*, sem*, and ipc(2) where the
	// architecture has it) and POSIX message queues (mq_*) with EPERM:
	// for a sandbox without an IPC namespace of its own (the Landlock-only
	// mode of an ordinary-user worker), whose IPC objects would be the
	// host's and would outlive the task.
	RefuseIPC bool
}

// Where the program comes from is per architecture: on amd64 a table
// generated from go-seccomp-bpf's assembly of the policy
// (sandbox/internal/seccomppolicy; ztable_amd64.go, held to it by
// TestSeccompTableIsTheLibrarysAssembly), so no binary linking the
// sandbox builds the library's syscall tables at start (every `warren
// exec`, `warren sandbox run` and worker start would); elsewhere the
// library assembles it at first use (assemble_other.go). Both are
// program.

// Program is the filter of o as the init loads it, assembled once per
// Options (it only depends on their fields and the architecture). An
// assembly error (a bug) yields an empty program, which the init refuses
// to load: it fails the run closed rather than run without the filter.
func Program(o Options) *initproc.Seccomp {
	if v, ok := assembledPolicies.Load(o); ok {
		return v.(*initproc.Seccomp)
	}
	v, _ := assembledPolicies.LoadOrStore(o, assemble(o))
	return v.(*initproc.Seccomp)
}

// assembledPolicies caches assembled programs by Options value (a
// handful: one per combination of its booleans).
var assembledPolicies sync.Map

func assemble(o Options) *initproc.Seccomp {
	raw, err := program(o)
	if err != nil {
		return &initproc.Seccomp{}
	}
	prog := make([]initproc.SockFilter, len(raw))
	for i, in := range raw {
		prog[i] = initproc.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	return &initproc.Seccomp{Program: prog}
}
