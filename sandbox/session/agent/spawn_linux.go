package agent

import (
	"encoding/binary"
	"errors"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A command's processes must all be found again at its timeout or
// cancel, those that left its process group (setsid) and were orphaned
// included. So each command is its own child subreaper, from before its
// exec (the setting survives execve): while it lives, every orphan of its
// tree is re-parented to it, never to the agent, and its tree is walked
// from it (killTree). No Go API starts a process with that setting, so
// spawn vforks as syscall.ForkExec does, with the runtime's fork hooks,
// and the child makes only raw system calls, on the parent's stack below
// its frames, until its execve.

// The agent keeps room for its own threads: its commands' RLIMIT_NPROC
// (processes and threads of the uid, the agent's counted) is the
// session's less nprocReserve (a quarter of it at most), so a fork storm
// in the session cannot take what the agent needs to serve and to kill
// it. The Go runtime dies when it cannot start a thread.
const nprocReserve = 16

// spawnSpec is what spawn starts: argv[0] resolved to path, in dir, with
// fds as its stdin, stdout and stderr.
type spawnSpec struct {
	path string
	argv []string
	env  []string
	dir  string
	fds  [3]int
}

// spawned is a started command: its pid, and a pidfd on it.
type spawned struct {
	pid, pidfd int
}

// spawn starts s in its own process group as a child subreaper. An error
// wraps the errno of the step that failed (the execve's, typically).
func spawn(s spawnSpec) (spawned, error) {
	for _, fd := range s.fds {
		if fd < 3 {
			return spawned{}, errors.New("agent: a command's stdio must not be the agent's own")
		}
	}
	c, err := newChildPlan(s)
	if err != nil {
		return spawned{}, err
	}
	var p [2]int
	syscall.ForkLock.Lock()
	err = unix.Pipe2(p[:], unix.O_CLOEXEC)
	if err == nil {
		c.errFD = p[1]
		c.fork()
	}
	syscall.ForkLock.Unlock()
	if err != nil {
		return spawned{}, err
	}
	_ = unix.Close(p[1])
	defer unix.Close(p[0])
	if c.errno != 0 {
		return spawned{}, c.errno
	}
	// The child reports a failed step on the pipe; end of file means its
	// execve succeeded (the pipe is close-on-exec).
	var b [4]byte
	n, _ := readFull(p[0], b[:])
	if n == 0 {
		return spawned{pid: c.pid, pidfd: int(c.pidfd)}, nil
	}
	var ws unix.WaitStatus
	_, _ = unix.Wait4(c.pid, &ws, 0, nil) // ECHILD: the agent's reap took it
	_ = unix.Close(int(c.pidfd))
	return spawned{}, syscall.Errno(binary.LittleEndian.Uint32(b[:]))
}

func readFull(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m == 0 {
			return n, err
		}
		n += m
	}
	return n, nil
}

// childPlan is everything the child needs, made before the fork: after
// it, the child may not allocate.
type childPlan struct {
	path, dir  *byte
	argv, envv []*byte
	fds        [3]int
	errFD      int
	nproc      *unix.Rlimit // nil: left as the agent's

	pid    int
	pidfd  int32
	errno  syscall.Errno // the fork's own failure, in the parent
	report [4]byte
}

func newChildPlan(s spawnSpec) (*childPlan, error) {
	c := &childPlan{fds: s.fds, pidfd: -1}
	var err error
	if c.path, err = syscall.BytePtrFromString(s.path); err != nil {
		return nil, err
	}
	if c.dir, err = syscall.BytePtrFromString(s.dir); err != nil {
		return nil, err
	}
	if c.argv, err = syscall.SlicePtrFromStrings(s.argv); err != nil {
		return nil, err
	}
	if c.envv, err = syscall.SlicePtrFromStrings(s.env); err != nil {
		return nil, err
	}
	c.nproc = commandNproc()
	return c, nil
}

// commandNproc is the RLIMIT_NPROC of the agent's commands (nil: the
// agent's own, unlimited).
func commandNproc() *unix.Rlimit {
	var l unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &l) != nil || l.Cur == unix.RLIM_INFINITY {
		return nil
	}
	n := l.Cur - min(nprocReserve, l.Cur/4)
	return &unix.Rlimit{Cur: n, Max: min(l.Max, n)}
}

//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

//go:linkname runtimeAfterForkInChild syscall.runtime_AfterForkInChild
func runtimeAfterForkInChild()

// rawVfork is clone(flags, 0, pidfd, 0, 0) made safe for a vfork
// (vfork_linux_*.s).
//
//go:noescape
func rawVfork(flags, pidfd uintptr) (pid, errno uintptr)

// fork vforks (the parent waits until the child has exec'd or exited,
// and no page table is copied, so no copy-on-write fault follows in the
// agent) and, in the child, runs the plan; it returns in the parent only.
// The child never returns from this frame.
//
//go:noinline
//go:norace
//go:nocheckptr
//go:nosplit
func (c *childPlan) fork() {
	runtimeBeforeFork()
	pid, errno := rawVfork(uintptr(unix.CLONE_VM|unix.CLONE_VFORK|unix.CLONE_PIDFD|unix.SIGCHLD), uintptr(unsafe.Pointer(&c.pidfd)))
	if errno != 0 || pid != 0 {
		runtimeAfterFork()
		c.pid, c.errno = int(pid), syscall.Errno(errno)
		return
	}
	runtimeAfterForkInChild()
	c.child()
}

// child becomes a subreaper in its own process group, lowers its process
// limit, takes its stdio and directory, and execs; a failed step is
// reported on errFD. Raw system calls only.
//
//go:norace
//go:nocheckptr
//go:nosplit
func (c *childPlan) child() {
	if _, _, e := syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0, 0); e != 0 {
		c.fail(e)
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_SETPGID, 0, 0, 0); e != 0 {
		c.fail(e)
	}
	if c.nproc != nil {
		if _, _, e := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_NPROC, uintptr(unsafe.Pointer(c.nproc)), 0, 0, 0); e != 0 {
			c.fail(e)
		}
	}
	for i, fd := range c.fds {
		if _, _, e := syscall.RawSyscall(unix.SYS_DUP3, uintptr(fd), uintptr(i), 0); e != 0 {
			c.fail(e)
		}
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(c.dir)), 0, 0); e != 0 {
		c.fail(e)
	}
	_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(c.path)),
		uintptr(unsafe.Pointer(&c.argv[0])), uintptr(unsafe.Pointer(&c.envv[0])))
	c.fail(e)
}

// fail reports errno on errFD and exits; it never returns.
//
//go:norace
//go:nocheckptr
//go:nosplit
func (c *childPlan) fail(e syscall.Errno) {
	v := uint32(e)
	c.report = [4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
	syscall.RawSyscall(unix.SYS_WRITE, uintptr(c.errFD), uintptr(unsafe.Pointer(&c.report[0])), 4)
	for {
		syscall.RawSyscall(unix.SYS_EXIT, 253, 0, 0)
	}
}
