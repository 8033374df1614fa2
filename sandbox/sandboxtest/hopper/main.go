// Command hopper is a test fixture: a process that never keeps its pid.
// Run as `hopper MARKER`, it prints "ready", then forks a child that
// forks again at once and exits, each new process taking a session of its
// own, without end (printing a "." every 64 hops): a kill by pid, process group or session always finds
// the hopper gone, and a walk of its tree finds a child that has moved
// on. Every process of it carries MARKER in its command line (forks, never
// execs). Only raw system calls run after the first fork: the child has
// one thread, and the Go runtime must not be entered there.
package main

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 2 {
		os.Stderr.WriteString("usage: hopper MARKER\n")
		os.Exit(2)
	}
	// A write to a stdout nobody reads any more is EPIPE, not the end;
	// the hops this process may inherit as their reaper (pid 1, or a
	// subreaper) are reaped at once, so that no zombie counts against
	// the process limit.
	signal.Ignore(syscall.SIGPIPE, syscall.SIGCHLD)
	os.Stdout.WriteString("ready\n")
	pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if errno == 0 && pid == 0 {
		hop()
	}
	for { // the task's leader holds until it is killed
		_ = unix.Pause()
	}
}

// dot is what hop prints.
var dot = [1]byte{'.'}

// hop forks and exits, in every new process, for ever.
//
//go:nosplit
func hop() {
	for n := 1; ; n++ {
		pid, _, errno := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
		if errno != 0 {
			continue // at the process limit: try again
		}
		if pid != 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		unix.RawSyscall(unix.SYS_SETSID, 0, 0, 0)
		if n%64 == 0 {
			unix.RawSyscall(unix.SYS_WRITE, 1, uintptr(unsafe.Pointer(&dot[0])), 1)
		}
	}
}
