package wire

import (
	"fmt"
	"time"
)

// Hello is the agent's first frame (id 0).
type Hello struct {
	Version uint64
	PID     int64 // the agent's pid as it sees it (1 in namespace mode)
	UID     int64
	Home    string // $HOME: the sandbox's home, at its host path
}

// Exec asks the agent to start a command (the frame id is the exec id).
type Exec struct {
	Argv       []string
	Env        []string // KEY=VALUE, over the agent's own environment
	Cwd        string   // relative to the home, or absolute; empty: the home
	Stdin      []byte
	Background bool
	Timeout    time.Duration // 0: none
}

// Started says the command of exec id runs, with its pid (the agent's view).
type Started struct{ PID int64 }

// Exit is how exec id ended.
type Exit struct {
	ExitCode int64 // -1 when a signal ended it
	Signal   string
	TimedOut bool
	Wall     time.Duration
}

// Kill asks the agent to signal one of its processes.
type Kill struct {
	PID    int64
	Signal int64
}

// Refusal codes of KillReply and Refused.
const (
	CodeOK        = 0
	CodeNoProcess = 1 // no such process among the agent's descendants
	CodeInvalid   = 2 // the request cannot be served (bad signal, bad frame)
	CodeFailed    = 3 // the system call failed
)

// Reply answers Kill (KillReply) or refuses a request (Refused).
type Reply struct {
	Code    uint64
	Message string
}

// Process is one process the agent started, as Ps lists it.
type Process struct {
	ExecID     uint32
	PID        int64
	Argv       []string
	Started    time.Time
	Background bool
	// Ended is when a background command ended (zero while it runs), with
	// its exit code or, killed, its signal number.
	Ended            time.Time
	ExitCode, Signal int64
}

// PsReply lists the agent's live processes.
type PsReply struct{ Processes []Process }

// Marshal encodings.

func (m Hello) Marshal() []byte {
	var e enc
	e.uint(m.Version)
	e.int(m.PID)
	e.int(m.UID)
	e.str(m.Home)
	return e.b
}

func (m Exec) Marshal() []byte {
	var e enc
	e.strs(m.Argv)
	e.strs(m.Env)
	e.str(m.Cwd)
	e.bytes(m.Stdin)
	e.bool(m.Background)
	e.int(int64(m.Timeout))
	return e.b
}

func (m Started) Marshal() []byte { var e enc; e.int(m.PID); return e.b }

func (m Exit) Marshal() []byte {
	var e enc
	e.int(m.ExitCode)
	e.str(m.Signal)
	e.bool(m.TimedOut)
	e.int(int64(m.Wall))
	return e.b
}

func (m Kill) Marshal() []byte { var e enc; e.int(m.PID); e.int(m.Signal); return e.b }

func (m Reply) Marshal() []byte { var e enc; e.uint(m.Code); e.str(m.Message); return e.b }

func (m PsReply) Marshal() []byte {
	var e enc
	e.uint(uint64(len(m.Processes)))
	for _, p := range m.Processes {
		e.uint(uint64(p.ExecID))
		e.int(p.PID)
		e.strs(p.Argv)
		e.int(p.Started.UnixNano())
		e.bool(p.Background)
		ended := int64(0)
		if !p.Ended.IsZero() {
			ended = p.Ended.UnixNano()
		}
		e.int(ended)
		e.int(p.ExitCode)
		e.int(p.Signal)
	}
	return e.b
}

// Unmarshal decodings: each refuses a malformed or trailing payload.

func (m *Hello) Unmarshal(p []byte) error {
	d := dec{b: p}
	m.Version, m.PID, m.UID = d.uint("hello version"), d.int("hello pid"), d.int("hello uid")
	m.Home = d.str("hello home")
	return d.end("hello")
}

func (m *Exec) Unmarshal(p []byte) error {
	d := dec{b: p}
	m.Argv = d.strs("exec argv")
	m.Env = d.strs("exec env")
	m.Cwd = d.str("exec cwd")
	m.Stdin = d.bytes("exec stdin")
	m.Background = d.bool("exec background")
	m.Timeout = time.Duration(d.int("exec timeout"))
	if err := d.end("exec"); err != nil {
		return err
	}
	if len(m.Argv) == 0 {
		return fmt.Errorf("%w: exec with an empty argv", ErrFrame)
	}
	if m.Timeout < 0 {
		return fmt.Errorf("%w: exec timeout %v is negative", ErrFrame, m.Timeout)
	}
	return nil
}

func (m *Started) Unmarshal(p []byte) error {
	d := dec{b: p}
	m.PID = d.int("started pid")
	return d.end("started")
}

func (m *Exit) Unmarshal(p []byte) error {
	d := dec{b: p}
	m.ExitCode = d.int("exit code")
	m.Signal = d.str("exit signal")
	m.TimedOut = d.bool("exit timed_out")
	m.Wall = time.Duration(d.int("exit wall"))
	return d.end("exit")
}

func (m *Kill) Unmarshal(p []byte) error {
	d := dec{b: p}
	m.PID, m.Signal = d.int("kill pid"), d.int("kill signal")
	return d.end("kill")
}

func (m *Reply) Unmarshal(p []byte) error {
	d := dec{b: p}
	m.Code, m.Message = d.uint("reply code"), d.str("reply message")
	return d.end("reply")
}

func (m *PsReply) Unmarshal(p []byte) error {
	d := dec{b: p}
	// Each entry takes at least 8 bytes (eight one-byte fields).
	n := d.count("ps count", 8)
	m.Processes = make([]Process, 0, n)
	for range n {
		var pr Process
		id := d.uint("ps exec id")
		if id > 1<<32-1 {
			d.fail("ps exec id")
		}
		pr.ExecID = uint32(id)
		pr.PID = d.int("ps pid")
		pr.Argv = d.strs("ps argv")
		pr.Started = time.Unix(0, d.int("ps started"))
		pr.Background = d.bool("ps background")
		if ended := d.int("ps ended"); ended != 0 {
			pr.Ended = time.Unix(0, ended)
		}
		pr.ExitCode, pr.Signal = d.int("ps exit code"), d.int("ps signal")
		m.Processes = append(m.Processes, pr)
	}
	return d.end("ps reply")
}
