package initproc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/internal/reap"
	"golang.org/x/sys/unix"
)

// A template is the init of a sandbox reused task after task (namespace
// mode). It built the view once (Config.NS with Config.Template) and
// holds the namespaces every task of it shares: user, network, UTS,
// cgroup, and its own mount and pid namespaces, where it is pid 1.
// It never runs a task itself. For each task the worker sends it, over
// TemplateFD, the task's stdio and a config and status pipe of its own; it
// forks (the clone copies a small process, no new user namespace) a fresh
// init of this binary into new pid, IPC and mount namespaces, with those
// pipes as its descriptors 0..4, and reports the child's pidfd and, once
// reaped, how it ended. The worker speaks to that child as to any warm
// init: Config.Fresh first (setupFresh: its own /proc, home, /tmp and
// /dev/shm, built before StatusReady), then the task. So nothing a task
// can change outlives it: its processes die with its pid namespace, its
// mounts and files with its mount namespace and fresh tmpfs, its SysV IPC
// with its IPC namespace; rlimits, environment, Landlock and seccomp are
// per process and set in the child only (docs/sandbox-design.md lists the
// properties and the tests that hold them).

// InitEnv is the environment every init starts with (none of it reaches
// the task, whose environment is Config.Env): one processor (the init is
// one locked thread's work; fewer threads, and a template's count
// against its cgroup's pids), and no garbage collection, which an init,
// gone at its exec, never needs (exec.go then skips its collection).
var InitEnv = []string{"GOMAXPROCS=1", "GOGC=off"}

// TemplateFD is a template's end of its SOCK_SEQPACKET socket to the
// worker (exec.Cmd.ExtraFiles' third entry).
const TemplateFD = 5

// BinaryFD is the init's descriptor on its own binary, the one it was
// exec'd through (/proc/self/fd/6) when the worker runs a dedicated init
// (ExtraFiles' fourth entry; the third is then TemplateFD or none). Like
// every descriptor above stdio it closes at the task's exec.
const BinaryFD = 6

// Template replies, the first byte of each message the template sends.
const (
	TemplateSpawned     = 'p' // the child runs; its pidfd is the message's only descriptor
	TemplateSpawnFailed = 'f' // the fork or exec failed: a uint32 errno follows
	TemplateExited      = 'w' // the child was reaped: a TemplateExit follows
)

// TemplateTaskFDs is how many descriptors a task request carries: stdin,
// stdout, stderr, the child's config pipe (read end) and its status pipe
// (write end), in that order.
const TemplateTaskFDs = 5

// TaskCaps are the capabilities (in the template's user namespace) a
// template's child keeps across its exec, to mount its fresh /proc, home,
// /tmp and /dev/shm and drop its bounding set. It drops them all before
// the task.
var TaskCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE}

// taskCloneFlags are the namespaces each task of a template has of its own.
const taskCloneFlags = unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC

// Fresh is what a template's child mounts in its own namespaces before
// StatusReady: a fresh /proc of its pid namespace over the template's, a
// home tmpfs of Home.Size over the template's home, and that home's .tmp
// and .shm at /tmp and /dev/shm (nosuid, nodev, noexec).
//
// Covering /tmp and /dev/shm covers what the template's view mounted under
// them (a home or a toolchain under the host's /tmp): Keep are those
// binds of the view and Symlinks its links there, made again on top, in
// the view's order (the home is then the fresh one), and Hide its hidden
// paths there (NSConfig.Hide), covered again after them.
type Fresh struct {
	Home     HomeQuota `json:"home"`
	Keep     []Bind    `json:"keep,omitempty"`
	Symlinks []Symlink `json:"symlinks,omitempty"`
	Hide     []string  `json:"hide,omitempty"`
}

// TemplateExit is how a template's child ended, as the template reaped it.
type TemplateExit struct {
	Status syscall.WaitStatus
	OwnCPU time.Duration // the child's own user + system time (not its children's)
	User   time.Duration // rusage of the child and its reaped descendants
	Sys    time.Duration
	MaxRSS int64 // kilobytes
}

const templateExitLen = 1 + 4 + 4*8

// Marshal encodes e as a TemplateExited message.
func (e TemplateExit) Marshal() []byte {
	b := make([]byte, templateExitLen)
	b[0] = TemplateExited
	binary.LittleEndian.PutUint32(b[1:], uint32(e.Status))
	for i, v := range []int64{int64(e.OwnCPU), int64(e.User), int64(e.Sys), e.MaxRSS} {
		binary.LittleEndian.PutUint64(b[5+8*i:], uint64(v))
	}
	return b
}

// UnmarshalTemplateExit decodes a TemplateExited message.
func UnmarshalTemplateExit(b []byte) (TemplateExit, error) {
	if len(b) != templateExitLen || b[0] != TemplateExited {
		return TemplateExit{}, errors.New("template: malformed exit report")
	}
	v := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[5+8*i:])) }
	return TemplateExit{Status: syscall.WaitStatus(binary.LittleEndian.Uint32(b[1:])),
		OwnCPU: time.Duration(v(0)), User: time.Duration(v(1)), Sys: time.Duration(v(2)), MaxRSS: v(3)}, nil
}

// serveTemplate is a template's life after StatusReady: one task request
// at a time until the worker closes its end, then exit. It never returns.
func serveTemplate() {
	// No descriptor of the template reaches a child but the five it is
	// given; the task's own init closes the rest at its exec again.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		os.Exit(ExitSetup)
	}
	// Long-lived, unlike every other init (InitEnv): collect garbage.
	debug.SetGCPercent(100)
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*TemplateTaskFDs))
	for {
		n, oobn, _, _, err := unix.Recvmsg(TemplateFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || (n == 0 && oobn == 0) {
			os.Exit(0) // the worker closed the template (or is gone)
		}
		fds := ReceivedFDs(oob[:oobn])
		if len(fds) != TemplateTaskFDs {
			closeAll(fds)
			templateReply([]byte{TemplateSpawnFailed, byte(unix.EINVAL), 0, 0, 0}, -1)
			continue
		}
		pid, pidfd, err := spawnTask(fds)
		closeAll(fds)
		if err != nil {
			errno, _ := err.(syscall.Errno)
			r := []byte{TemplateSpawnFailed, 0, 0, 0, 0}
			binary.LittleEndian.PutUint32(r[1:], uint32(errno))
			templateReply(r, -1)
			continue
		}
		templateReply([]byte{TemplateSpawned}, pidfd)
		_ = unix.Close(pidfd)
		templateReply(reapTask(pid).Marshal(), -1)
	}
}

// spawnTask forks a fresh init of this binary into new pid, IPC and mount
// namespaces with fds as its 0..4.
func spawnTask(fds []int) (pid, pidfd int, err error) {
	files := make([]uintptr, len(fds))
	for i, fd := range fds {
		files[i] = uintptr(fd)
	}
	pidfd = -1
	pid, err = syscall.ForkExec("/proc/self/exe", []string{Arg0}, &syscall.ProcAttr{
		Env:   InitEnv,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Cloneflags:  taskCloneFlags,
			AmbientCaps: TaskCaps,
			Pdeathsig:   syscall.SIGKILL, // this thread: the template's locked main thread
			PidFD:       &pidfd,
		},
	})
	if err == nil && pidfd < 0 {
		// The worker must be able to kill the child without a pid race.
		_ = unix.Kill(pid, unix.SIGKILL)
		reapTask(pid)
		return 0, -1, unix.ENOSYS
	}
	return pid, pidfd, err
}

// reapTask waits for the child to exit, reads its own CPU time while it
// is a zombie, and reaps it. It waits for every child and tracee, and
// collects every other report on the way: a thread of the task that made
// this process its tracer (PTRACE_TRACEME) and exited is reaped, or the
// task's end would never be reported (package sandbox/internal/reap); a
// tracee's stop or trap is consumed, since it is no end.
func reapTask(pid int) TemplateExit {
	for {
		r, err := reap.Next()
		if err != nil || (r.PID == pid && r.Code.Ended()) {
			break // err: ECHILD, nothing left to wait for
		}
		if r.PID == pid {
			reap.ConsumeStop(pid)
			continue
		}
		reap.Discard(r)
	}
	var e TemplateExit
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		e.OwnCPU = StatCPU(b)
	}
	var ru unix.Rusage
	for {
		_, err := unix.Wait4(pid, (*unix.WaitStatus)(&e.Status), unix.WALL, &ru)
		if err != unix.EINTR {
			break
		}
	}
	e.User = time.Duration(ru.Utime.Nano())
	e.Sys = time.Duration(ru.Stime.Nano())
	e.MaxRSS = ru.Maxrss
	return e
}

// templateReply sends one message to the worker, with fd as its descriptor
// when fd >= 0. A worker that is gone ends the template.
func templateReply(msg []byte, fd int) {
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	for {
		err := unix.Sendmsg(TemplateFD, msg, oob, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			os.Exit(0)
		}
		return
	}
}

// ReceivedFDs are the descriptors of a message's SCM_RIGHTS (none when it
// carries none or cannot be parsed).
func ReceivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// setupFresh is a template's child's namespace phase (Config.Fresh), in its
// new mount namespace, a copy of the template's: everything it mounts
// stacks over the template's own mounts and dies with this namespace.
func setupFresh(f *Fresh) error {
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	// The /proc of this pid namespace: the template is not in it.
	if err := unix.Mount("proc", "/proc", "proc", flags, ""); err != nil {
		return fail("mount /proc", "/proc", err)
	}
	// The template's memory is charged to the cgroup its tasks are
	// limited by: the OOM killer must choose the task, however small its
	// processes. Raising needs no privilege; the task can lower it back to
	// the parent's at most (oom_score_adj_min), never below.
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0); err != nil {
		return fail("set oom_score_adj", "/proc/self/oom_score_adj", err)
	}
	if err := mountHomeQuota(&f.Home); err != nil {
		return err
	}
	srcs, err := openTmpIn(f.Home.Path)
	if err != nil {
		return err
	}
	// Opened before /tmp and /dev/shm are covered (the home after its
	// fresh tmpfs is mounted: it is that one which is kept).
	keep := make([]openedSource, 0, len(f.Keep))
	defer func() { closeSources(srcs); closeSources(keep) }()
	for _, b := range f.Keep {
		k, err := openSource(b.Source)
		if err != nil {
			return fail("open bind source", b.Source, err)
		}
		keep = append(keep, k)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open root", "/", err)
	}
	defer unix.Close(root)
	for i, p := range []string{"/tmp", "/dev/shm"} {
		if err := bindTmp(root, srcs[i], p); err != nil {
			return fail(Step("bind "+p), f.Home.Path+"/"+tmpInDirs[i], err)
		}
	}
	if err := bindAndLink(root, keep, f.Keep, f.Symlinks); err != nil {
		return err
	}
	return hideAll(root, f.Hide)
}

// UnderTmp reports whether path lies in /tmp or /dev/shm, which a
// template's task covers with its own (Fresh.Keep).
func UnderTmp(path string) bool {
	return strings.HasPrefix(path, "/tmp/") || strings.HasPrefix(path, "/dev/shm/")
}

func closeSources(srcs []openedSource) {
	for _, s := range srcs {
		_ = unix.Close(s.fd)
	}
}

// StatCPU is utime + stime (fields 14 and 15, clock ticks of 1/100 s)
// of a /proc/<pid>/stat line; the command name before them may hold
// spaces and parentheses, so fields are counted after its last ')'.
func StatCPU(b []byte) time.Duration {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+st) * (time.Second / userHZ)
}

// userHZ is the unit of /proc times (USER_HZ, 100 on Linux's ABI).
const userHZ = 100
