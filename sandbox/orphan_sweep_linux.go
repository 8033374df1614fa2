package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warrenhq/warren/sandbox/internal/reap"
	"golang.org/x/sys/unix"
)

// The orphan sweep catches what a Landlock-only run leaves behind when
// nothing else can: an ordinary-user worker (no pool uid to sweep) without
// a cgroup. Two child subreapers make every leftover process the worker's
// child, and only once its own run has ended:
//
//   - the task is a subreaper (the init sets PR_SET_CHILD_SUBREAPER before
//     exec, which keeps it): while it runs, a double-forked daemon of its
//     tree reparents to it, not to the worker;
//   - the worker is a subreaper (becomeSubreaper): when the task exits,
//     what is left of its tree, setsid escapees included, reparents to the
//     worker.
//
// So a child of the worker that is under a seccomp filter the worker does
// not have, with NO_NEW_PRIVS, and is no live init of this process, is a
// leftover of an ended run: sweepOrphans kills and reaps it. Being the
// worker's child, its pid cannot be reused before the worker reaps it, so
// the kill cannot hit another process. One exception: a child of the
// worker in the session of a live init is a clone(CLONE_PARENT) sibling
// of that run's task, not a leftover yet, and is left to that run's kill
// and teardown (killing it would kill its group, that task). A process the worker itself started
// outside a sandbox under its own seccomp filter would look the same: the
// warren binary starts none (tests must not run such a child across a
// Landlock-only run's teardown).

// becomeSubreaper makes this process a child subreaper, once; every
// orphan of its descendants then reparents to it instead of to init.
var becomeSubreaper = sync.OnceValue(func() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
})

// liveInits counts this process's inits that have not been reaped yet
// (a count: a reaped init's pid may be reused by the next init before the
// first one's entry is dropped).
var liveInits = struct {
	sync.Mutex
	pids map[int]int
}{pids: map[int]int{}}

// registerInit records a started init; it must happen before the init can
// load its seccomp filter (before its config is sent), so no sweep ever
// sees a live init as a leftover.
func registerInit(pid int) {
	liveInits.Lock()
	liveInits.pids[pid]++
	liveInits.Unlock()
}

// unregisterInit drops an init once it has been reaped.
func unregisterInit(pid int) {
	liveInits.Lock()
	if liveInits.pids[pid]--; liveInits.pids[pid] <= 0 {
		delete(liveInits.pids, pid)
	}
	liveInits.Unlock()
}

func isLiveInit(pid int) bool {
	liveInits.Lock()
	defer liveInits.Unlock()
	return liveInits.pids[pid] > 0
}

// orphanSweepTimeout bounds how long a sweep goes on without finding a
// leftover it has not seen before: what it killed and still sees then is
// stuck (in the kernel). A leftover that keeps changing its pid (a fork
// and exit in a loop) or a tree that keeps growing gives the sweep new
// pids, and it goes on until it has them all.
const orphanSweepTimeout = time.Second

// sweepOrphans SIGKILLs and reaps every leftover of ended runs (see
// above) until a round finds none; what a killed leftover's children
// become, orphans of the worker too (dead or alive), the next round
// catches.
func sweepOrphans() error {
	known := map[int]bool{}
	deadline := time.Now().Add(orphanSweepTimeout)
	for backoff := time.Duration(0); ; backoff = min(max(2*backoff, time.Millisecond), 50*time.Millisecond) {
		seen, left, err := sweepOrphansOnce(true)
		if err != nil || len(seen) == 0 {
			return err
		}
		for _, pid := range seen {
			if !known[pid] {
				known[pid] = true
				deadline, backoff = time.Now().Add(orphanSweepTimeout), 0 // look again at once
			}
		}
		if time.Now().After(deadline) {
			if left == 0 {
				return nil
			}
			return fmt.Errorf("%d leftover processes survive the orphan sweep", left)
		}
		time.Sleep(backoff)
	}
}

// reapDeadOrphans reaps the dead leftovers among this process's children,
// killing none. A root worker is no subreaper, but a Landlock-mode task
// can still give it children: clone(CLONE_PARENT) makes a sibling of the
// task, the worker's child, which the run's cgroup or uid sweep kills and
// nothing else would reap. One waitid says whether any child has anything
// to report; only then are the children read.
func reapDeadOrphans() {
	if reap.Pending() {
		_, _, _ = sweepOrphansOnce(false)
	}
}

// sweepOrphansOnce looks at this process's children once: it kills the
// live leftovers (when kill is set) and reaps the dead ones, and returns
// the leftovers it saw and how many of them are not reaped yet.
func sweepOrphansOnce(kill bool) (seen []int, left int, err error) {
	own, err := readProcStatus("self")
	if err != nil {
		return nil, 0, err
	}
	self := strconv.Itoa(os.Getpid())
	for _, pid := range ownChildren() {
		st, err := readProcStatus(strconv.Itoa(pid))
		if err != nil || st.ppid != self || !st.noNewPrivs || st.seccompFilters <= own.seccompFilters || isLiveInit(pid) {
			continue
		}
		if !st.zombie {
			if !kill || isLiveInit(reap.Session(pid)) {
				// In the session of a run that lives (its init made
				// itself the session's leader, and a pid is not reused
				// while a session has it): that run's own process, a
				// clone(CLONE_PARENT) sibling of its task, which the
				// run's kill and teardown take. Killing it here, on
				// another run's end, would kill its group: that task.
				continue
			}
			killLeftover(pid)
		}
		seen = append(seen, pid)
		// Our child, so the pid is still its own. Its exited threads that
		// made us their tracer hold its end back: reaped first. Not dead
		// yet: the next round reaps it. ECHILD: another sweep reaped it
		// first.
		reap.TracedThreads(pid)
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case err != nil && !errors.Is(err, unix.ECHILD) && !errors.Is(err, unix.EINTR):
			return seen, left, fmt.Errorf("reap leftover %d: %w", pid, err)
		case err == nil && got == 0, err == nil && (ws.Stopped() || ws.Continued()):
			left++
		}
	}
	return seen, left, nil
}

// leftoverWalkTime bounds each walk of a leftover's tree.
const leftoverWalkTime = 200 * time.Millisecond

// killLeftover kills a leftover, a child of this process, and its whole
// tree (a fork storm's too: reap.Tree), stopped first: it, its group and
// its tree. Its pid is its own (our child, not reaped); no group of this
// process's own is signalled.
func killLeftover(pid int) {
	own := unix.Getpgrp()
	spare := func(pgid int) bool { return pgid == own || pgid <= 0 }
	g := reap.Group(pid)
	if !spare(g) {
		_ = unix.Kill(-g, unix.SIGSTOP)
	}
	_ = unix.Kill(pid, unix.SIGSTOP)
	t := reap.NewTree(pid, spare)
	t.Stop(leftoverWalkTime)
	if !spare(g) {
		_ = unix.Kill(-g, unix.SIGKILL)
	}
	_ = unix.Kill(pid, unix.SIGKILL)
	t.Kill(leftoverWalkTime)
}

// ownChildren lists this process's children: every thread's (a child's
// parent is the thread that started it, or the process when it was
// reparented here).
func ownChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// procStatus is what the sweep reads of /proc/<pid>/status.
type procStatus struct {
	ppid           string
	zombie         bool
	noNewPrivs     bool
	seccompFilters int
}

func readProcStatus(pid string) (procStatus, error) {
	var st procStatus
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return st, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 8192))
	if err != nil {
		return st, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			st.zombie = strings.HasPrefix(v, "Z")
		case "PPid":
			st.ppid = v
		case "NoNewPrivs":
			st.noNewPrivs = v == "1"
		case "Seccomp_filters":
			st.seccompFilters, _ = strconv.Atoi(v)
		}
	}
	return st, nil
}
