// Package seccomppolicy is the sandbox's seccomp policy written for
// go-seccomp-bpf, and its assembly.
//
// # Model
//
// [Instructions] and [Program] build the filter for this architecture
// from two choices (inet sockets, AF_UNIX sockets). Package
// sandbox/internal/seccomp hands the program to the init; on amd64 it
// takes it from a table generated from [Program] (`go generate
// ./sandbox/internal/seccomp`, command gen) and held to it by a test, so
// that no binary pays the library's syscall tables at start.
//
// # Failure handling
//
// An assembly error is returned; package seccomp then gives the init an
// empty program, which the init refuses: the run fails closed.
//
// # Limits
//
// Only architectures go-seccomp-bpf has syscall tables for (x86_64, i386,
// aarch64, arm) can be assembled.
package seccomppolicy
