package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procID names one process across pid reuse: its pid and start time.
type procID struct {
	pid   int
	start uint64
}

// procIDsOf pins pids (found alive) to their start times.
func procIDsOf(t *testing.T, pids []int) []procID {
	t.Helper()
	ids := make([]procID, 0, len(pids))
	for _, pid := range pids {
		st, _, ok := procStat(pid)
		if !ok {
			t.Fatalf("process %d ended before it could be pinned", pid)
		}
		ids = append(ids, procID{pid: pid, start: st})
	}
	return ids
}

// procStat reads a process's start time and state from /proc/<pid>/stat,
// which (unlike cmdline) never waits on the process's memory map lock.
func procStat(pid int) (start uint64, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The command name may hold spaces and parentheses: fields start
	// after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, "", false
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	return st, f[0], err == nil
}

// liveOf returns those of ids still alive: same pid and start time, and
// neither a zombie nor dead (an exited process only waits to be reaped).
func liveOf(ids []procID) []procID {
	var live []procID
	for _, id := range ids {
		st, state, ok := procStat(id.pid)
		if ok && st == id.start && state != "Z" && state != "X" {
			live = append(live, id)
		}
	}
	return live
}

// requireGoneWithin waits until every process of ids has ended. On timeout
// it fails naming what each survivor is doing (state, parent, pending
// signals), so a failure says why rather than just "never satisfied".
func requireGoneWithin(t *testing.T, ids []procID, limit time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		live := liveOf(ids)
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, id := range live {
				fmt.Fprintf(&b, "\n  pid %d: %s", id.pid, procSummary(id.pid))
				// Not left behind for the rest of the suite (its start time
				// was checked just above).
				_ = syscall.Kill(id.pid, syscall.SIGKILL)
			}
			t.Fatalf("%s: still alive after %v (killed now):%s", what, limit, b.String())
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// procSummary is the part of /proc/<pid>/status that explains a process
// that outlived what should have killed it.
func procSummary(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var keep []string
	for l := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		switch k {
		case "Name", "State", "PPid", "NSpid", "Uid", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt":
			if ok {
				keep = append(keep, k+"="+strings.Join(strings.Fields(v), ","))
			}
		}
	}
	return strings.Join(keep, " ")
}
