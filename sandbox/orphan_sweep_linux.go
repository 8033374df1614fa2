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
// the kill cannot hit another process. A process the worker itself started
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

// orphanSweepTimeout bounds one sweep, as landlockSweepTimeout does.
const orphanSweepTimeout = time.Second

// sweepOrphans SIGKILLs and reaps every leftover of ended runs (see
// above) until none is left; what a killed leftover's children become,
// orphans of the worker too, the next round catches.
func sweepOrphans() error {
	own, err := readProcStatus("self")
	if err != nil {
		return err
	}
	self := strconv.Itoa(os.Getpid())
	deadline := time.Now().Add(orphanSweepTimeout)
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		live, err := sweepOrphansOnce(self, own.seccompFilters)
		if err != nil || live == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d leftover processes survive the orphan sweep", live)
		}
		time.Sleep(backoff)
	}
}

// sweepOrphansOnce scans /proc once: it kills the live leftovers, reaps
// the dead ones, and returns how many are not reaped yet.
func sweepOrphansOnce(self string, ownFilters int) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	live := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStatus(e.Name())
		if err != nil || st.ppid != self || !st.noNewPrivs || st.seccompFilters <= ownFilters || isLiveInit(pid) {
			continue
		}
		if !st.zombie {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		// Our child, so the pid is still its own. Not dead yet: the next
		// round reaps it. ECHILD: another sweep reaped it first.
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		switch {
		case err != nil && !errors.Is(err, unix.ECHILD) && !errors.Is(err, unix.EINTR):
			return live, fmt.Errorf("reap leftover %d: %w", pid, err)
		case err == nil && got == 0:
			live++
		}
	}
	return live, nil
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
