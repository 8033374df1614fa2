// Package seccomp is the seccomp filter a sandbox's init loads (with
// Landlock, or in the layered mode), as the init takes it: the program of
// the policy in sandbox/internal/seccomppolicy for the sandbox's options.
//
// # Model
//
// [Program] returns the filter for [Options] (inet sockets, AF_UNIX
// sockets, SysV IPC and POSIX message queues refused) as an [initproc.Seccomp], assembled once per Options. On amd64
// the instructions come from a table generated from seccomppolicy
// (ztable_amd64.go; `go generate ./sandbox/internal/seccomp`), held to it
// by a test, so a binary linking the sandbox does not link go-seccomp-bpf
// and its syscall tables; on other architectures seccomppolicy assembles
// them at first use.
//
// # Failure handling
//
// An assembly error (a bug, or a stale table missing an Options) yields
// an empty program, which the init refuses to load: the run fails closed
// rather than run without the filter.
//
// # Limits
//
// Linux only. The table covers amd64; elsewhere only the architectures
// go-seccomp-bpf has syscall tables for can be assembled.
package seccomp
