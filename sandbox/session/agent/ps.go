package agent

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/warrenhq/warren/sandbox/session/internal/wire"
	"golang.org/x/sys/unix"
)

// ps lists the commands the agent started that still run, by pid, then
// the background commands that ended (the last maxEnded), in the order
// they ended.
func (a *agent) ps() wire.PsReply {
	a.mu.Lock()
	defer a.mu.Unlock()
	var r wire.PsReply
	for _, p := range a.procs {
		r.Processes = append(r.Processes, wire.Process{ExecID: p.id, PID: int64(p.pid), Argv: p.argv, Started: p.started, Background: p.bg})
	}
	sort.Slice(r.Processes, func(i, j int) bool { return r.Processes[i].PID < r.Processes[j].PID })
	r.Processes = append(r.Processes, a.ended...)
	return r
}

// rememberEnded records how background command p ended, for ps (called
// with a.mu held, as p is reaped).
func (a *agent) rememberEnded(p *proc, ws unix.WaitStatus) {
	e := wire.Process{ExecID: p.id, PID: int64(p.pid), Argv: p.argv, Started: p.started, Background: true, Ended: time.Now()}
	switch {
	case ws.Signaled():
		e.Signal, e.ExitCode = int64(ws.Signal()), -1
	default:
		e.ExitCode = int64(ws.ExitStatus())
	}
	if len(a.ended) == maxEnded {
		a.ended = append(a.ended[:0], a.ended[1:]...)
	}
	a.ended = append(a.ended, e)
}

// kill signals one of the agent's descendants: a command it started gets
// the signal on its whole process group, any other descendant (a child of
// a command, an orphan re-parented to the agent) on itself alone. Any
// other pid, the agent's own included, is refused as no such process.
func (a *agent) kill(m wire.Kill) wire.Reply {
	if m.Signal < 1 || m.Signal > 64 {
		return wire.Reply{Code: wire.CodeInvalid, Message: fmt.Sprintf("signal %d is not between 1 and 64", m.Signal)}
	}
	if m.PID <= 0 || m.PID > 1<<22 || int(m.PID) == a.self {
		return wire.Reply{Code: wire.CodeNoProcess, Message: fmt.Sprintf("pid %d is not a process of this sandbox", m.PID)}
	}
	pid, sig := int(m.PID), unix.Signal(m.Signal)
	a.mu.Lock()
	defer a.mu.Unlock() // held so a reaped pid is not reused under the signal
	target := pid
	if _, ours := a.procs[pid]; ours {
		target = -pid
	} else if !a.descendant(pid) {
		return wire.Reply{Code: wire.CodeNoProcess, Message: fmt.Sprintf("pid %d is not a process of this sandbox", m.PID)}
	}
	if err := unix.Kill(target, sig); err != nil {
		if err == unix.ESRCH {
			return wire.Reply{Code: wire.CodeNoProcess, Message: fmt.Sprintf("pid %d has ended", m.PID)}
		}
		return wire.Reply{Code: wire.CodeFailed, Message: fmt.Sprintf("kill %d: %v", m.PID, err)}
	}
	return wire.Reply{}
}

// descendant reports whether pid's parent chain reaches the agent.
func (a *agent) descendant(pid int) bool {
	for range 4096 {
		ppid, ok := parentOf(pid)
		if !ok || ppid <= 0 {
			return false
		}
		if ppid == a.self {
			return true
		}
		pid = ppid
	}
	return false
}

// parentOf reads the parent pid from /proc/<pid>/stat (the field after the
// parenthesised command name, which may itself hold parentheses).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}
