package sandboxtest

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Trick is a program that tries to outlive its end: the ways a task's
// processes can keep it from being reported ended, or survive the kill.
// Each is a python3 script (ctypes for ptrace and prctl) run as
//
//	python3 -c <Script> <marker> on|off
//
// With "off" it is the control: the same program without the trick. Both
// print "ready" once the trick is played and then hold (sleep) until they
// are killed, unless EndsByItself: then they exit 0 right after "ready".
// The marker is in the command line of every process of the program
// (they are forks of it, never execs), so MarkerProcs finds them all.
type Trick struct {
	Name string
	// Script is the program (PythonPrelude included).
	Script string
	// Evidence starts a line the program prints on stdout when it played
	// the trick ("" when the trick shows in its processes: Shows).
	Evidence string
	// Shows, when set, is what the program's processes show once the
	// trick is played (a stopped process, a second session).
	Shows func([]Proc) bool
	// EndsByItself: the program exits right after "ready".
	EndsByItself bool
	// Hog: the trick takes the host's processes and CPU, so its control
	// must not run beside it.
	Hog bool
}

// Argv is the trick's command line with its marker, on or off.
func (t Trick) Argv(marker string, on bool) []string {
	mode := "off"
	if on {
		mode = "on"
	}
	return []string{Python, "-c", t.Script, marker, mode}
}

// Python is the interpreter the tricks run with.
const Python = "/usr/bin/python3"

// PythonPrelude is the start of every trick's script.
const PythonPrelude = `import ctypes, os, random, signal, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_TRACEME = 0
on = sys.argv[2] == "on"
me = os.getpid()
def say(*a):
    print(*a, flush=True)
def hold():
    while True:
        time.sleep(60)
`

// Tricks are the programs a task's end must withstand.
var Tricks = []Trick{
	{
		// A non-main thread makes the task's parent its tracer and exits:
		// the kernel keeps it a zombie until that tracer waits for it, and
		// the task's leader is never reported ended before.
		Name: "traceme-thread",
		Script: PythonPrelude + `
if on:
    r = []
    t = threading.Thread(target=lambda: r.append(libc.ptrace(PTRACE_TRACEME, 0, None, None)))
    t.start(); t.join()
    say("traced", r[0])
say("ready"); hold()
`,
		Evidence: "traced 0",
	},
	{
		// The same, and the program then exits by itself: its end must be
		// seen without any timeout.
		Name: "traceme-thread-exit",
		Script: PythonPrelude + `
if on:
    r = []
    t = threading.Thread(target=lambda: r.append(libc.ptrace(PTRACE_TRACEME, 0, None, None)))
    t.start(); t.join()
    say("traced", r[0])
say("ready"); os._exit(0)
`,
		Evidence:     "traced 0",
		EndsByItself: true,
	},
	{
		// A thread of the task is traced by another of its processes (a
		// child in a session of its own), then exits, and so does the
		// task: its end is held back until that tracer lets go or dies.
		Name: "traced-by-child",
		Script: PythonPrelude + `
PTRACE_SEIZE = 0x4206
if on:
    go, seized = threading.Event(), os.pipe()
    t = threading.Thread(target=go.wait)
    t.start()
    if os.fork() == 0:
        os.setsid()
        r = libc.ptrace(PTRACE_SEIZE, t.native_id, None, None)
        os.write(seized[1], b"1" if r == 0 else b"0")
        hold()
    say("seized", os.read(seized[0], 1) == b"1")
    go.set(); t.join()
say("ready"); os._exit(0)
`,
		Evidence:     "seized True",
		EndsByItself: true,
	},
	{
		// The task itself is a traced child: its main thread makes its
		// parent the tracer and stops, which is reported to that parent
		// as a stop, never as an end.
		Name: "traceme-stop",
		Script: PythonPrelude + `
if on:
    say("traced", libc.ptrace(PTRACE_TRACEME, 0, None, None))
    say("ready")
    os.kill(me, signal.SIGSTOP)
else:
    say("ready")
hold()
`,
		Evidence: "traced 0",
		Shows:    anyStopped,
	},
	{
		// The task traces its own child, which stops for it.
		Name: "tracer-inside",
		Script: PythonPrelude + `
if on:
    pid = os.fork()
    if pid == 0:
        libc.ptrace(PTRACE_TRACEME, 0, None, None)
        os.kill(os.getpid(), signal.SIGSTOP)
        hold()
    _, st = os.waitpid(pid, 0)
    say("tracing", os.WIFSTOPPED(st))
say("ready"); hold()
`,
		Evidence: "tracing True",
		Shows:    anyStopped,
	},
	{
		// A child stops itself, and so does the task (pid 1 of a pid
		// namespace ignores its own SIGSTOP).
		Name: "sigstop",
		Script: PythonPrelude + `
if on:
    if os.fork() == 0:
        os.kill(os.getpid(), signal.SIGSTOP)
        hold()
say("ready")
if on:
    os.kill(me, signal.SIGSTOP)
hold()
`,
		Shows: anyStopped,
	},
	{
		// A daemonised grandchild (setsid, double fork) that keeps the
		// task's stdout open.
		Name: "daemon",
		Script: PythonPrelude + `
if on:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            say("daemon")
            hold()
        os._exit(0)
    os.wait()
say("ready"); hold()
`,
		Evidence: "daemon",
		Shows:    manySessions,
	},
	{
		// The task and its child ignore SIGTERM.
		Name: "ignore-term",
		Script: PythonPrelude + `
if on:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        hold()
    say("ignoring")
say("ready"); hold()
`,
		Evidence: "ignoring",
	},
	{
		// A sibling: clone(CLONE_PARENT) makes a child of the task's
		// parent, which then makes that parent the tracer of one of its
		// threads (pid 1 of a pid namespace may not: EINVAL).
		Name: "clone-parent",
		Script: PythonPrelude + `
if on:
    SYS_clone = 220 if os.uname().machine == "aarch64" else 56
    pid = libc.syscall(SYS_clone, 0x8000 | signal.SIGCHLD, 0, 0, 0, 0)  # CLONE_PARENT
    if pid == 0:
        r = []
        t = threading.Thread(target=lambda: r.append(libc.ptrace(PTRACE_TRACEME, 0, None, None)))
        t.start(); t.join()
        say("sibling traced", r[0])
        hold()
    say("clone-parent", "made" if pid > 0 else "refused")
say("ready"); hold()
`,
		Evidence: "clone-parent",
	},
	{
		// A fork storm that is still forking when the kill comes: every
		// process forks on, a third of them in sessions of their own, a
		// tenth of the non-leaders exit; at the process limit they retry.
		Name: "fork-storm",
		Script: PythonPrelude + `
say("ready")
if not on:
    hold()
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
while True:
    try:
        if os.fork() == 0:
            if random.random() < 0.3:
                os.setsid()
            continue
    except OSError:
        time.sleep(0.002)
    if os.getpid() != me and random.random() < 0.1:
        os._exit(0)
`,
		Shows: func(ps []Proc) bool { return len(ps) >= 8 },
		Hog:   true,
	},
	{
		// A chain of 4 processes (an argument after on|off sets the
		// depth; the process limit may stop it first): each the parent of
		// the next, each in a session of its own, so no session or group
		// kill takes more than one link.
		Name: "setsid-chain",
		Script: PythonPrelude + `
if on:
    depth, most = 0, int(sys.argv[3]) if len(sys.argv) > 3 else 4
    while depth < most:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid:
            hold()
        os.setsid()
        depth += 1
    say("chain", depth)
say("ready"); hold()
`,
		Evidence: "chain",
		Shows:    func(ps []Proc) bool { return len(ps) >= 5 },
	},
	{
		// A process that never keeps its pid: it forks, the parent exits,
		// the child takes a session of its own and does it again, so a
		// kill by pid, group or session finds it gone and a walk of the
		// tree finds a child that has moved on.
		Name: "pid-hopper",
		Script: PythonPrelude + `
if on:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # no zombie of a hop counts
if on and os.fork() == 0:
    n = 0
    while True:
        try:
            if os.fork():
                os._exit(0)
        except OSError:
            time.sleep(0.001)
            continue
        os.setsid()
        n += 1
        if n == 10:
            say("hopping")
say("ready"); hold()
`,
		Evidence: "hopping",
		Hog:      true,
	},
}

// TrickNamed returns the trick called name; it panics for an unknown one.
func TrickNamed(name string) Trick {
	for _, t := range Tricks {
		if t.Name == name {
			return t
		}
	}
	panic("sandboxtest: no trick " + name)
}

// Proc is a live process whose command line holds a marker.
type Proc struct {
	PID   int
	State byte // from /proc/<pid>/stat: R, S, D, T (stopped), t (traced)...
	SID   int
}

func anyStopped(ps []Proc) bool {
	for _, p := range ps {
		if p.State == 'T' || p.State == 't' {
			return true
		}
	}
	return false
}

func manySessions(ps []Proc) bool {
	sids := map[int]bool{}
	for _, p := range ps {
		sids[p.SID] = true
	}
	return len(sids) > 1
}

// MarkerProcs lists the processes on the host whose command line holds
// marker as one of its arguments. A zombie has no command line: it is
// not listed (NoZombieChildren covers this process's own).
func MarkerProcs(marker string) []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var ps []Proc
	want := []byte("\x00" + marker + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, want) {
			continue
		}
		p := Proc{PID: pid}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			p.State, p.SID = statFields(st)
		}
		if p.State == 'Z' || p.State == 'X' {
			continue
		}
		ps = append(ps, p)
	}
	return ps
}

// statFields reads the state and session of a /proc/<pid>/stat line
// (the command name may hold spaces and parentheses: fields are counted
// after its last ')').
func statFields(b []byte) (state byte, sid int) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 || len(f[0]) != 1 {
		return 0, 0
	}
	sid, _ = strconv.Atoi(f[3])
	return f[0][0], sid
}

// ZombieChildren lists this process's children that are zombies: a
// child it never reaps.
func ZombieChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var zs []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			st, err := os.ReadFile("/proc/" + f + "/stat")
			if err != nil {
				continue
			}
			if s, _ := statFields(st); s == 'Z' {
				pid, _ := strconv.Atoi(f)
				zs = append(zs, pid)
			}
		}
	}
	return zs
}

// NewZombieChildren waits up to a second for this process to have no
// zombie child but those in before (other tests' own; a run beside
// reaps its own init just after its end) and returns those left.
func NewZombieChildren(before []int) []int {
	deadline := time.Now().Add(time.Second)
	for {
		var left []int
		for _, z := range ZombieChildren() {
			if !slices.Contains(before, z) {
				left = append(left, z)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// LineWatch is an io.Writer that keeps what is written and closes Seen
// once a line equal to Line has been written. Safe for concurrent use.
type LineWatch struct {
	Line string

	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{}
	done bool // seen is closed
}

// NewLineWatch watches for line.
func NewLineWatch(line string) *LineWatch {
	return &LineWatch{Line: line, seen: make(chan struct{})}
}

func (w *LineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && bytes.Contains(append([]byte("\n"), w.buf.Bytes()...), []byte("\n"+w.Line+"\n")) {
		w.done = true
		close(w.seen)
	}
	return len(p), nil
}

// Seen is closed once the line was written.
func (w *LineWatch) Seen() <-chan struct{} { return w.seen }

// String is everything written so far.
func (w *LineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
