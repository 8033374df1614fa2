package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the child pid has ended (a zombie, not reaped:
// the caller's Wait or waitid(WNOWAIT) then returns at once), waiting on
// a pidfd through the runtime's poller instead of in a blocking waitid(2).
//
// Why: a goroutine blocked in waitid holds its P in a system call for the
// task's whole life, and meanwhile the process's poller was not polled
// (until sysmon's 10 ms network poll, or the P's retake after 10 ms): the
// reads of the run's output pipes waited for it. Measured on a warm
// namespace run whose task writes and then keeps running (as a session's
// agent does): first output byte 19.4 ms → 4.9 ms p50; a cold run's
// output 8–10 ms late → 0.1–0.2 ms (docs/benchmarks.md, "A run's output
// waited for the poller").
//
// Without pidfds (Linux < 5.3) it returns at once and the caller's
// blocking wait does the waiting, as before.
func waitExited(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A pidfd polls readable once its process has ended; the check is
	// repeated on every wake-up (and done once before the first wait).
	_ = rc.Read(func(fd uintptr) bool {
		for {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				return err != nil || info.Signo != 0 // ended, or nothing to wait for
			}
		}
	})
}
