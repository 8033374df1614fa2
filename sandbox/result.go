package sandbox

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// resultFromState is the Result of a reaped command (the command itself
// in mode none).
func resultFromState(ps *os.ProcessState, wall time.Duration) *Result {
	return resultFromEnd(endOf(ps), wall)
}

// resultFromEnd is the Result of an ended init or command.
func resultFromEnd(e initEnd, wall time.Duration) *Result {
	res := &Result{ExitCode: -1, Wall: wall, CPU: e.cpu, PeakMemory: e.maxRSS}
	switch ws := e.status; {
	case ws.Exited():
		res.ExitCode = ws.ExitStatus()
	case ws.Signaled():
		res.Signal = unix.SignalName(ws.Signal())
	}
	return res
}
