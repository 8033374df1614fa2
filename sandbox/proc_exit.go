package sandbox

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/internal/reap"
	"golang.org/x/sys/unix"
)

// A run's init (by then its task) is the worker's child, so the task can
// make the worker the tracer of any of its threads (PTRACE_TRACEME; see
// package sandbox/internal/reap): an exited traced thread then stays a
// zombie until the worker waits for it, and until then the task's end is
// never reported, even after a SIGKILL. So the worker never waits for one
// notification of the end: exitWatch looks again on a clock, reaps the
// task's traced threads each time, takes a leader that exited (a zombie
// whose end is held back) for the task's end, and once the run is being
// killed kills its tree again until the end is reported, for reapGrace
// at most.

// The watch's clock: while the run lives, from idleTickMin doubling to
// idleTickMax; once it is being killed, from killTickMin to killTickMax.
const (
	idleTickMin = 20 * time.Millisecond
	idleTickMax = 500 * time.Millisecond
	killTickMin = time.Millisecond
	killTickMax = 50 * time.Millisecond
)

// reapGrace bounds how long after its kill a run's end may take to be
// reported before the run fails with errUnreaped. A pid namespace's
// teardown on a host whose CPUs are all busy is slow but ends; only a
// process stuck in the kernel should reach this bound, since a run that
// does fails (and is retried) instead of ending as it did.
const reapGrace = 5 * time.Second

// errUnreaped means a killed run's init was still not reported ended
// reapGrace after the kill (a process stuck in the kernel): its result
// is unknown, and its leftovers stay for the teardown check.
var errUnreaped = errors.New("sandbox: the task's processes were not reaped within " + reapGrace.String() + " of the kill")

// exitWatch waits for the end of a child of the worker: a run's init.
type exitWatch struct {
	pid int
	// pidfd polls readable once the child has ended (through the
	// runtime's poller: a goroutine blocked in waitid would hold its P);
	// nil without one, when the watch sleeps between looks.
	pidfd *os.File
	rc    syscall.RawConn
	// killing is set once the run is being killed; kick wakes a watch
	// that sleeps without a pidfd.
	killing atomic.Bool
	kick    chan struct{}
}

// watchExit starts watching pid, a child of this process.
func watchExit(pid int) *exitWatch {
	w := &exitWatch{pid: pid, kick: make(chan struct{}, 1)}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return w // Linux < 5.3, or out of descriptors: the clock alone
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		_ = f.Close() // not pollable
		return w
	}
	w.pidfd, w.rc = f, rc
	return w
}

// close releases the pidfd; the watch is not used after.
func (w *exitWatch) close() {
	if w.pidfd != nil {
		_ = w.pidfd.Close()
	}
}

// killed tells the watch the run is being killed: it looks at once, and
// from then on often. Safe to call from any goroutine, any number of times.
func (w *exitWatch) killed() {
	w.killing.Store(true)
	if w.pidfd != nil {
		_ = w.pidfd.SetReadDeadline(time.Now())
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// wait returns once the child has ended and its end waits to be
// collected (the caller's Wait then returns at once). kill kills the
// run's tree: called when the leader is found exited with its end held
// back, and again on every look once the run is being killed.
func (w *exitWatch) wait(kill func()) error {
	tick := idleTickMin
	var killedAt time.Time
	for {
		if w.sleep(tick, !killedAt.IsZero()) {
			return nil
		}
		reap.TracedThreads(w.pid)
		if !w.killing.Load() && reap.Zombie(w.pid) {
			// The task's leader exited: that is the task's end, whatever
			// holds its report back (a thread another of its processes
			// traces, say) goes with the rest of its tree.
			w.killed()
		}
		if !w.killing.Load() {
			tick = min(2*tick, idleTickMax)
			continue
		}
		if killedAt.IsZero() {
			killedAt, tick = time.Now(), killTickMin
		} else if time.Since(killedAt) > reapGrace {
			return errUnreaped
		}
		kill()
		tick = min(2*tick, killTickMax)
	}
}

// sleep waits up to d for the child's end and reports whether it has
// ended; a kill the caller does not know of yet (known false) cuts it
// short.
func (w *exitWatch) sleep(d time.Duration, known bool) bool {
	if w.pidfd == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-w.kick:
		}
		return reap.Ended(w.pid)
	}
	_ = w.pidfd.SetReadDeadline(time.Now().Add(d))
	if !known && w.killing.Load() {
		// killed() may have set its deadline before this one: look now.
		_ = w.pidfd.SetReadDeadline(time.Now())
	}
	// A pidfd polls readable once its process has ended; the check runs
	// on every wake-up (and once before the first wait). A stop or trap
	// of a traced task is not an end.
	err := w.rc.Read(func(fd uintptr) bool { return reap.EndedFD(int(fd)) })
	return err == nil
}
