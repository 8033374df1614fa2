// Package agent is the program a session runs inside its sandbox
// (cmd/warren-sandbox-agent): it reads requests on stdin and answers on
// stdout in the framed protocol of package session/internal/wire, forks
// the commands it is asked to run, streams their output, reaps them (it
// is pid 1 of the sandbox's pid namespace in namespace mode, a child
// subreaper in Landlock mode) and signals only its own descendants. It
// holds no privilege: it runs as the sandbox's uid under every layer of
// the sandbox, like any task. See package session for the model.
package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/warrenhq/warren/sandbox/session/internal/wire"
	"golang.org/x/sys/unix"
)

// drainGrace is how long the agent waits, once a foreground command has
// exited, for its output pipes to reach end of file (a background child
// of it may hold them open) before it reports the exit anyway.
const drainGrace = 2 * time.Second

// killedDrainGrace replaces drainGrace for a command the agent killed
// (its timeout, a cancel): what still holds its pipes left its process
// group, and its output is not waited for.
const killedDrainGrace = 100 * time.Millisecond

// agent is one running agent.
type agent struct {
	home string
	self int

	wmu sync.Mutex // serialises frames on out
	out io.Writer

	mu    sync.Mutex // guards procs, execs and ended; held across fork and registration
	procs map[int]*proc
	execs map[uint32]*proc
	// ended are the last background commands that ended (at most
	// maxEnded, oldest first): ps reports how they ended.
	ended []wire.Process
}

// maxEnded bounds the ended background commands ps remembers.
const maxEnded = 32

// proc is one command the agent started.
type proc struct {
	id       uint32
	pid      int
	argv     []string
	started  time.Time
	bg       bool
	pidfd    int           // the command's pidfd (-1: none), closed when it is reaped
	exited   chan struct{} // closed once reaped; status is then set
	status   unix.WaitStatus
	timedOut bool // set under agent.mu by the timeout
	killed   bool // set under agent.mu by end
	timer    *time.Timer
}

// Main runs the agent on the process's stdin and stdout until stdin ends,
// then kills every process group it started and returns the exit status.
func Main() int {
	return Run(os.Stdin, os.Stdout)
}

// Run serves requests from in and writes frames to out until in ends.
func Run(in io.Reader, out io.Writer) int {
	a := &agent{
		home:  os.Getenv("HOME"),
		self:  os.Getpid(),
		out:   out,
		procs: map[int]*proc{},
		execs: map[uint32]*proc{},
	}
	// Not dumpable: the sandbox's commands share the agent's uid, and must
	// not open its stdout through /proc/<pid>/fd or ptrace it to forge
	// frames (execve makes their own programs dumpable again).
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if a.self != 1 {
		// Orphans of the commands come to the agent, which reaps them and
		// can still signal them (pid 1 gets them anyway).
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	// A host gone mid-write is an EPIPE error, not a death by SIGPIPE
	// (a handled signal is reset to default in the commands).
	signal.Notify(make(chan os.Signal, 1), unix.SIGPIPE)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, unix.SIGCHLD)
	go func() {
		for range chld {
			a.reap()
		}
	}()
	if err := a.send(wire.TypeHello, 0, wire.Hello{Version: wire.Version, PID: int64(a.self), UID: int64(os.Getuid()), Home: a.home}.Marshal()); err != nil {
		fmt.Fprintln(os.Stderr, "warren-sandbox-agent: hello:", err)
		return 1
	}
	err := a.serve(bufio.NewReaderSize(in, 64<<10))
	a.killAll()
	if !errors.Is(err, io.EOF) { // serve ends only on an error
		fmt.Fprintln(os.Stderr, "warren-sandbox-agent:", err)
		return 1
	}
	return 0
}

// serve dispatches frames until the stream ends or breaks.
func (a *agent) serve(in io.Reader) error {
	r := wire.NewReader(in)
	for {
		f, err := r.ReadFrame()
		if err != nil {
			return err
		}
		if err := a.dispatch(f); err != nil {
			return err
		}
	}
}

func (a *agent) dispatch(f wire.Frame) error {
	switch f.Type {
	case wire.TypeExec:
		var m wire.Exec
		if err := m.Unmarshal(f.Payload); err != nil {
			return a.refuse(f.ID, wire.CodeInvalid, err.Error())
		}
		return a.exec(f.ID, m)
	case wire.TypeCancel:
		a.cancel(f.ID)
		return nil
	case wire.TypePs:
		return a.send(wire.TypePsReply, f.ID, a.ps().Marshal())
	case wire.TypeKill:
		var m wire.Kill
		if err := m.Unmarshal(f.Payload); err != nil {
			return a.refuse(f.ID, wire.CodeInvalid, err.Error())
		}
		return a.send(wire.TypeKillReply, f.ID, a.kill(m).Marshal())
	default:
		return a.refuse(f.ID, wire.CodeInvalid, fmt.Sprintf("frame type %d is not a request", f.Type))
	}
}

func (a *agent) refuse(id uint32, code uint64, msg string) error {
	return a.send(wire.TypeRefused, id, wire.Reply{Code: code, Message: msg}.Marshal())
}

// send writes one frame; frames of concurrent commands never interleave.
func (a *agent) send(t wire.Type, id uint32, payload []byte) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return wire.WriteFrame(a.out, t, id, payload)
}

// reap collects every child and tracee that has ended: the agent's
// commands (their status goes to their proc), orphans re-parented to it,
// and the exited threads of a command that made the agent their tracer
// (PTRACE_TRACEME), which hold that command's end back until they are
// reaped. A tracee's stop, reported to its tracer unasked, is consumed
// and is no end: the command stays the agent's, its timeout still ends it.
func (a *agent) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		if ws.Stopped() || ws.Continued() {
			continue
		}
		a.mu.Lock()
		if p := a.procs[pid]; p != nil {
			p.status = ws
			delete(a.procs, pid)
			if p.bg {
				a.rememberEnded(p, ws)
			}
			if p.timer != nil {
				p.timer.Stop()
			}
			if p.pidfd >= 0 {
				_ = unix.Close(p.pidfd)
				p.pidfd = -1
			}
			close(p.exited)
		}
		a.mu.Unlock()
	}
}

// end SIGKILLs p's process group and p itself (a command that left its
// group); a.mu must be held, and p not reaped yet.
func (a *agent) end(p *proc) {
	p.killed = true
	_ = unix.Kill(-p.pid, unix.SIGKILL)
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	}
}

// killAll SIGKILLs every process group the agent started.
func (a *agent) killAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.procs {
		a.end(p)
	}
}
