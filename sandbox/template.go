package sandbox

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// Templates: in namespace mode (with the Landlock and seccomp layers) a
// warm sandbox is not thrown away after its task. Its init stays as the
// template (initproc/template.go), holding the view, the user, network, UTS
// and cgroup namespaces, the template's uid, home directory and cgroup, and
// forks each task's own init into fresh pid, IPC and mount namespaces,
// where it mounts a fresh /proc, home, /tmp and /dev/shm. After a task the
// worker checks that nothing of it is left (templateClean: the cgroup holds
// the template alone) before the template serves again; a template that
// fails any step is discarded and its task, if it never ran, runs cold.
// What a task could change and how each is reset is in doc.go
// ("Templates").

// templates says whether warm sandboxes of mode m are templates: the mode
// forks its tasks (namespace mode), they carry the seccomp layer (it
// refuses the keyring calls whose state the template's user namespace would
// otherwise keep), and homes are bounded (Config.Defaults.Disk: each task's
// is a fresh tmpfs; an unbounded home is a host directory, which cannot be
// made fresh per task).
func templates(r *Runner, m mode) bool {
	q, err := quotaFor(m, "", r.cfg.Defaults.Disk)
	return m.templated() && r.layered() && err == nil && q != quotaNone
}

// errTemplateGone means a template could not start a task (it died, or
// the fork failed): the task never ran in it.
var errTemplateGone = errors.New("sandbox: the template cannot start tasks")

// templateParent is the worker's end of a template: its socket to the
// template's init.
type templateParent struct {
	conn *net.UnixConn
}

// newTemplateSocket makes the socket between the worker and a template;
// init is the template's end (initproc.TemplateFD), closed once started.
func newTemplateSocket() (*templateParent, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &SetupError{Step: "template socket", Err: err}
	}
	own := os.NewFile(uintptr(fds[0]), "template")
	c, err := net.FileConn(own)
	_ = own.Close()
	if err != nil {
		_ = unix.Close(fds[1])
		return nil, nil, &SetupError{Step: "template socket", Err: err}
	}
	return &templateParent{conn: c.(*net.UnixConn)}, os.NewFile(uintptr(fds[1]), "template-init"), nil
}

func (p *templateParent) close() { _ = p.conn.Close() }

// spawn asks the parent for a task's init with fds as its 0..4 (stdin,
// stdout, stderr, config pipe, status pipe) and returns it once forked.
func (p *templateParent) spawn(fds [initproc.TemplateTaskFDs]int) (*templateChild, error) {
	if _, _, err := p.conn.WriteMsgUnix([]byte{'t'}, unix.UnixRights(fds[:]...), nil); err != nil {
		return nil, fmt.Errorf("%w: send task: %w", errTemplateGone, err)
	}
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := p.conn.ReadMsgUnix(buf, oob)
	if err != nil || n == 0 {
		return nil, fmt.Errorf("%w: the template is gone (%v)", errTemplateGone, err)
	}
	got := initproc.ReceivedFDs(oob[:oobn])
	switch {
	case buf[0] == initproc.TemplateSpawned && len(got) == 1:
		pid, err := pidfdPID(got[0])
		if err != nil {
			_ = unix.PidfdSendSignal(got[0], unix.SIGKILL, nil, 0)
			c := &templateChild{parent: p, pidfd: got[0]}
			_, _ = c.reap(nil)
			return nil, fmt.Errorf("%w: %w", errTemplateGone, err)
		}
		return &templateChild{parent: p, pidfd: got[0], pid: pid}, nil
	case buf[0] == initproc.TemplateSpawnFailed && n == 5:
		closeFDs(got)
		return nil, fmt.Errorf("%w: fork: %w", errTemplateGone, syscall.Errno(binary.LittleEndian.Uint32(buf[1:5])))
	}
	closeFDs(got)
	return nil, fmt.Errorf("%w: unexpected reply %q", errTemplateGone, buf[:n])
}

// templateChild is a task's init forked by its template: the worker
// kills it through its pidfd and learns how it ended from the parent.
type templateChild struct {
	parent *templateParent
	pid    int

	// mu guards pidfd: the wall timer's kill may race the reap, which
	// closes it (a closed descriptor's number may be reused by then).
	mu    sync.Mutex
	pidfd int // -1 once reaped

	once sync.Once
	end  initEnd
	err  error
}

func (c *templateChild) hostPID() int { return c.pid }

// kill SIGKILLs the task's init, and with it its pid namespace (the
// namespace mode has no kill tree). The parent's report of the end is
// then awaited for reapGrace at most: a template that does not report
// it is discarded (the task's run fails), never waited for.
func (c *templateChild) kill(func(*os.Process)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pidfd >= 0 {
		_ = unix.PidfdSendSignal(c.pidfd, unix.SIGKILL, nil, 0)
		_ = c.parent.conn.SetReadDeadline(time.Now().Add(reapGrace))
	}
}

// reap waits for the parent's report of the child's end (once). The
// parent collects the task's traced threads and its whole pid namespace
// goes with it: nothing is left to kill here.
func (c *templateChild) reap(func()) (initEnd, error) {
	c.once.Do(func() {
		buf := make([]byte, 64)
		n, err := c.parent.conn.Read(buf)
		var e initproc.TemplateExit
		if err == nil {
			e, err = initproc.UnmarshalTemplateExit(buf[:n])
		}
		if err != nil {
			// Not errTemplateGone: the task may have run, and must
			// not run twice.
			c.err = fmt.Errorf("sandbox: the template did not report the task's end: %w", err)
		} else {
			c.end = initEnd{status: e.Status, ownCPU: e.OwnCPU, cpu: e.User + e.Sys, maxRSS: e.MaxRSS * 1024}
		}
		c.mu.Lock()
		_ = unix.Close(c.pidfd)
		c.pidfd = -1
		_ = c.parent.conn.SetReadDeadline(time.Time{})
		c.mu.Unlock()
	})
	return c.end, c.err
}

// stop kills the child and collects it.
func (c *templateChild) stop() {
	c.kill(nil)
	_, _ = c.reap(nil)
}

// pidfdPID is the pid, in this process's pid namespace, of the process a
// pidfd refers to (its fdinfo's Pid line).
func pidfdPID(fd int) (int, error) {
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("pidfd %d: pid %q", fd, v)
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("pidfd %d: no Pid in its fdinfo", fd)
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
