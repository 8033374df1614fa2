// Package reap collects the processes Warren's parents are the parent or
// the tracer of: the worker (a run's init, and its task after the exec),
// a slot parent (each task's init) and the session agent (each command).
//
// A task can make its parent its tracer without asking: PTRACE_TRACEME
// from any of its threads links that thread to the process's parent. The
// kernel then keeps the thread, once it exits, as a zombie until its
// tracer waits for it, and does not report the thread group's leader as
// ended while it is there (nor, for pid 1 of a pid namespace, finish
// killing the namespace). A waitid for the leader's pid alone never
// returns, and a tracee's stops are reported to its tracer as if asked
// for (WUNTRACED or not). So a parent here waits for every child and
// tracee, with __WALL, takes a stop for what it is (not an end), and
// reaps the traced threads of its task.
package reap

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Code is what a waitid report says happened (the SIGCHLD si_code).
type Code int32

// The si_code values of SIGCHLD.
const (
	Exited    Code = 1 // CLD_EXITED
	Killed    Code = 2 // CLD_KILLED
	Dumped    Code = 3 // CLD_DUMPED
	Trapped   Code = 4 // CLD_TRAPPED: a tracee stopped for its tracer
	Stopped   Code = 5 // CLD_STOPPED
	Continued Code = 6 // CLD_CONTINUED
)

// Ended reports whether the process ended (exited, killed or dumped
// core), as opposed to stopped or continued.
func (c Code) Ended() bool { return c == Exited || c == Killed || c == Dumped }

// Report is one waitid report: which process, and what happened.
type Report struct {
	PID  int
	Code Code
	// Status is the exit status (Exited) or the signal (otherwise).
	Status int
}

// siginfo is the kernel's siginfo_t as waitid fills it for SIGCHLD (the
// pid, uid and status at the start of its union).
type siginfo struct {
	Signo, Errno, Code, _ int32
	PID, UID, Status      int32
	_                     [100]byte
}

var _ [unsafe.Sizeof(unix.Siginfo{}) - unsafe.Sizeof(siginfo{})]byte // same size
var _ [unsafe.Sizeof(siginfo{}) - unsafe.Sizeof(unix.Siginfo{})]byte

// waitid is waitid(2) with EINTR retried; ok is false when WNOHANG found
// nothing to report.
func waitid(idtype, id, options int) (r Report, ok bool, err error) {
	for {
		var si siginfo
		err = unix.Waitid(idtype, id, (*unix.Siginfo)(unsafe.Pointer(&si)), options, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || si.Signo == 0 {
			return Report{}, false, err
		}
		return Report{PID: int(si.PID), Code: Code(si.Code), Status: int(si.Status)}, true, nil
	}
}

// Next waits for the next report of any child or tracee and leaves it to
// be collected (WNOWAIT): the first stop, trap or end waiting. It fails
// with ECHILD when there is nothing left to wait for.
func Next() (Report, error) {
	r, _, err := waitid(unix.P_ALL, 0, unix.WEXITED|unix.WALL|unix.WNOWAIT)
	return r, err
}

// Pending reports whether any child or tracee has something to report (an
// end, a stop), leaving it to be collected.
func Pending() bool {
	_, ok, err := waitid(unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL)
	return err == nil && ok
}

// Discard takes r off the reports: a process that ended is reaped; a stop
// or trap is consumed (the process stays stopped, and is not reported
// again until it changes).
func Discard(r Report) {
	opts := unix.WSTOPPED | unix.WNOHANG | unix.WALL
	if r.Code.Ended() {
		opts = unix.WEXITED | unix.WNOHANG | unix.WALL
	}
	_, _, _ = waitid(unix.P_PID, r.PID, opts)
}

// ConsumeStop takes a stop or trap report of pid off, never its end (a
// zombie stays to be collected).
func ConsumeStop(pid int) {
	_, _, _ = waitid(unix.P_PID, pid, unix.WSTOPPED|unix.WNOHANG|unix.WALL)
}

// Ended reports whether pid (a child of this process, or one it traces)
// has ended and waits to be collected, or there is nothing of it to wait
// for (ECHILD): its end is no longer pending. A stop or trap is not an end.
func Ended(pid int) bool {
	return ended(waitid(unix.P_PID, pid, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL))
}

// EndedFD is Ended through a pidfd.
func EndedFD(pidfd int) bool {
	return ended(waitid(unix.P_PIDFD, pidfd, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL))
}

func ended(r Report, ok bool, err error) bool { return err != nil || (ok && r.Code.Ended()) }

// TracedThreads reaps the exited threads of pid that this process traces
// (one of them called PTRACE_TRACEME) and returns how many it reaped.
// Until they are, pid's end is not reported. Another thread of pid, or
// one another process traces, is left alone: waitid refuses it (ECHILD)
// or has nothing to report.
func TracedThreads(pid int) int {
	tids, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return 0
	}
	n := 0
	for _, t := range tids {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || tid == pid {
			continue
		}
		if r, ok, err := waitid(unix.P_PID, tid, unix.WEXITED|unix.WNOHANG|unix.WALL); err == nil && ok && r.Code.Ended() {
			n++
		}
	}
	return n
}

// Tracers lists the processes, other than this one, that trace a thread
// of pid (/proc's TracerPid, in this process's pid namespace): what holds
// an exited leader's end back when it is not this process.
func Tracers(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var ts []int
	for _, t := range tids {
		if tp := tracerOf(dir + t.Name()); tp > 0 && tp != self {
			ts = append(ts, tp)
		}
	}
	return ts
}

// tracerOf is the TracerPid of the task at dir (0: none, or unreadable).
func tracerOf(dir string) int {
	b, err := os.ReadFile(dir + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// Zombie reports whether pid has exited and waits for its parent: a
// leader whose end is not reported yet, because a traced thread of it is
// left, is one.
func Zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
		}
	}
	return false
}
