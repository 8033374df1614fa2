package sandbox

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// resultFromState is the Result of a reaped command (the init, or the
// command itself in mode none).
func resultFromState(ps *os.ProcessState, wall time.Duration) *Result {
	res := &Result{ExitCode: ps.ExitCode(), Wall: wall}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode = -1
		res.Signal = unix.SignalName(ws.Signal())
	}
	res.CPU = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		res.PeakMemory = ru.Maxrss * 1024
	}
	return res
}
