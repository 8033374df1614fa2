package sandbox

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// ipcProbe is a python3 program that probes SysV IPC and POSIX message
// queues, printing one line per object:
//
//	look KEY NAME   shmget(KEY, 0, 0), then shmat and the segment's first
//	                8 bytes: "shm:found:<bytes>" or "shm:<errno>";
//	                mq_open(/NAME, O_RDONLY): "mq:found" or "mq:<errno>"
//	make KEY NAME   a 1 MiB segment of KEY and the queue /NAME, left in
//	                place: "shm:made" or "shm:<errno>", "mq:made" or "mq:<errno>"
//	private NAME    a private shm segment, message queue, semaphore set and
//	                the queue /NAME, each removed again: "shm:ok",
//	                "msg:ok", "sem:ok", "mq:ok" or "<kind>:<errno>"
const ipcProbe = `
import ctypes, ctypes.util, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
try:
    libc.mq_open
    rt = libc
except AttributeError:
    rt = ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
IPC_CREAT, IPC_EXCL, IPC_RMID, IPC_PRIVATE = 0o1000, 0o2000, 0, 0
O_RDONLY, O_RDWR, O_CREAT, O_EXCL = 0, 2, 0o100, 0o200
def err(kind):
    print(kind + ":" + errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())))
act = sys.argv[1]
if act == "look":
    key, name = int(sys.argv[2]), ("/" + sys.argv[3]).encode()
    i = libc.shmget(key, 0, 0)
    if i < 0:
        err("shm")
    else:
        p = libc.shmat(i, None, 0o10000)
        if p is None or p == ctypes.c_void_p(-1).value:
            err("shm")
        else:
            print("shm:found:" + ctypes.string_at(p, 8).decode(errors="replace"))
    q = rt.mq_open(name, O_RDONLY, 0, None)
    if q < 0:
        err("mq")
    else:
        print("mq:found")
elif act == "make":
    key, name = int(sys.argv[2]), ("/" + sys.argv[3]).encode()
    if libc.shmget(key, 1 << 20, IPC_CREAT | IPC_EXCL | 0o600) < 0:
        err("shm")
    else:
        print("shm:made")
    if rt.mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0o600, None) < 0:
        err("mq")
    else:
        print("mq:made")
elif act == "private":
    name = ("/" + sys.argv[2]).encode()
    i = libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600)
    if i < 0:
        err("shm")
    else:
        libc.shmctl(i, IPC_RMID, None)
        print("shm:ok")
    i = libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)
    if i < 0:
        err("msg")
    else:
        libc.msgctl(i, IPC_RMID, None)
        print("msg:ok")
    i = libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600)
    if i < 0:
        err("sem")
    else:
        libc.semctl(i, 0, IPC_RMID)
        print("sem:ok")
    q = rt.mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0o600, None)
    if q < 0:
        err("mq")
    else:
        rt.mq_unlink(name)
        print("mq:ok")
`

func ipcProbeArgv(args ...string) []string {
	return append([]string{"/usr/bin/python3", "-c", ipcProbe}, args...)
}

// ipcRequire skips (fails in CI) without python3, which the probe needs.
func ipcRequire(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 missing (make deps)")
		}
		t.Skip("python3 missing (make deps)")
	}
}

// ipcNames are a fresh SysV key (never IPC_PRIVATE) and POSIX queue name.
func ipcNames() (int, string) {
	key := 0x57000000 | int(rand.Uint32()&0xffffff)
	return key, fmt.Sprintf("warren-ipc-test-%d-%x", os.Getpid(), rand.Uint64())
}

// hostProbe runs the probe as a plain host process (the control), as uid
// when it is not -1.
func hostProbe(t *testing.T, uid int, args ...string) string {
	t.Helper()
	argv := ipcProbeArgv(args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

// mqOpen opens (with O_CREAT: creates, mode 0644) the host's POSIX queue
// name (no leading slash, as the system call takes it).
func mqOpen(name string, flags int) (int, error) {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(flags|unix.O_CLOEXEC), 0o644, 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func mqUnlink(name string) {
	p, err := unix.BytePtrFromString(name)
	if err == nil {
		_, _, _ = unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0)
	}
}

// hostIPCGone removes the host's segment of key and queue name if they
// exist, reporting whether they did.
func hostIPCGone(t *testing.T, key int, name string) (shm, mq bool) {
	t.Helper()
	if id, err := unix.SysvShmGet(key, 0, 0); err == nil {
		shm = true
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	} else {
		require.ErrorIs(t, err, unix.ENOENT)
	}
	if fd, err := mqOpen(name, unix.O_RDONLY); err == nil {
		mq = true
		unix.Close(fd)
		mqUnlink(name)
	} else {
		require.ErrorIs(t, err, unix.ENOENT)
	}
	return !shm, !mq
}

// landlockIPCRunners are a root worker's Landlock-mode runners, cold and
// warm (the warm one with a sandbox ready for Spec{}), and a check that a
// run's home was that of a warm sandbox.
func landlockIPCRunners(t *testing.T) map[string]*Runner {
	t.Helper()
	cold := llRunner(t, 1_900_103_000)
	warm, err := startedNew(Config{Isolation: IsolationLandlock, ScratchRoot: cold.cfg.ScratchRoot, Prestart: 1, UIDBase: 1_900_103_020, UIDCount: 16})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, warm.Close()) })
	return map[string]*Runner{"cold": cold, "warm": warm}
}

// ipcRun runs the probe in r's Landlock mode, warm when r has a warm
// sandbox for it (checked: the run's home existed before it).
func ipcRun(t *testing.T, r *Runner, args ...string) string {
	t.Helper()
	spec := Spec{Argv: []string{"/bin/sh", "-c", `echo "home:$HOME"; exec "$@"`, "sh"}, Isolation: IsolationLandlock}
	spec.Argv = append(spec.Argv, ipcProbeArgv(args...)...)
	var before map[string]bool
	if r.cfg.Prestart > 0 {
		k := landlockMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
		require.Eventually(t, func() bool { return r.warm.ready(k) == 1 }, 20*time.Second, 5*time.Millisecond)
		before = scratchDirs(t, r)
	}
	o := runIn(t, r, spec)
	require.Equal(t, 0, o.res.ExitCode, o.stdout+o.stderr)
	require.Equal(t, layersLandlockOnly.String(), o.res.InForce)
	home, rest, ok := strings.Cut(o.stdout, "\n")
	require.True(t, ok, o.stdout)
	if before != nil {
		require.True(t, before[strings.TrimPrefix(home, "home:")], "ran in a warm sandbox: %s", home)
	}
	return rest
}

// TestLandlockModeIPCIsPrivate: a root worker's Landlock-mode runs, cold
// and warm, have an IPC namespace of their own. The host's SysV shm
// segment (by its key) and POSIX queue are not found inside, where the
// same probe run on the host as a plain process of a pool-like uid finds
// and reads them (the control); a segment and queue made inside are gone
// with the run, where ones made by a host process stay until removed.
func TestLandlockModeIPCIsPrivate(t *testing.T) {
	llRequire(t, 6)
	ipcRequire(t)
	if os.Geteuid() != 0 {
		t.Skip("only a root worker can give the Landlock mode an IPC namespace; an ordinary user's runs are refused IPC instead (TestLandlockModeRefusesIPCWithoutAnIPCNamespace)")
	}
	key, name := ipcNames()
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o666)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	mem, err := unix.SysvShmAttach(id, 0, 0)
	require.NoError(t, err)
	copy(mem, "hostshm!")
	require.NoError(t, unix.SysvShmDetach(mem))
	fd, err := mqOpen(name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR)
	require.NoError(t, err)
	unix.Close(fd)
	t.Cleanup(func() { mqUnlink(name) })

	// Control: a host process of another uid finds and reads them both.
	require.Equal(t, "shm:found:hostshm!\nmq:found\n", hostProbe(t, 1_900_103_099, "look", fmt.Sprint(key), name))

	for mode, r := range landlockIPCRunners(t) {
		t.Run(mode, func(t *testing.T) {
			// Not fatal: the check below runs as well.
			assert.Equal(t, "shm:ENOENT\nmq:ENOENT\n", ipcRun(t, r, "look", fmt.Sprint(key), name), "the host's IPC objects are not the run's")

			// Landlock refuses opening a queue (no rule covers the mqueue
			// fs): the run may not make one at all.
			inKey, inName := ipcNames()
			made := ipcRun(t, r, "make", fmt.Sprint(inKey), inName)
			require.Contains(t, []string{"shm:made\nmq:made\n", "shm:made\nmq:EACCES\n"}, made)
			shmGone, mqGone := hostIPCGone(t, inKey, inName)
			require.True(t, shmGone, "the run's shm segment must not outlive it")
			require.True(t, mqGone, "the run's queue must not outlive it")
		})
	}

	// Control: the same objects made by a host process outlive it.
	outKey, outName := ipcNames()
	require.Equal(t, "shm:made\nmq:made\n", hostProbe(t, -1, "make", fmt.Sprint(outKey), outName))
	shmGone, mqGone := hostIPCGone(t, outKey, outName)
	require.False(t, shmGone, "control: a host process's segment stays")
	require.False(t, mqGone, "control: a host process's queue stays")
}

// TestLandlockModeRefusesIPCWithoutAnIPCNamespace: a worker that cannot
// give its Landlock-mode runs an IPC namespace (an ordinary user; root on
// a host that refuses namespaces, as a container's seccomp profile does:
// the test then runs again in such a child) has their seccomp filter
// refuse SysV shared memory, message queues, semaphores and POSIX message
// queues with EPERM (else the runs would share them, with each other and
// the host, and outlive their task); the control makes each, as the same
// user, outside a sandbox.
func TestLandlockModeRefusesIPCWithoutAnIPCNamespace(t *testing.T) {
	llRequire(t, 6)
	ipcRequire(t)
	if os.Geteuid() == 0 && !inContainerChild(t) {
		require.True(t, ipcNamespaceAllowed(), "control: root makes an IPC namespace here")
		runInContainerChild(t, sandboxtest.ContainerNoNamespaces)
		return
	}
	if inContainerChild(t) {
		requireNamespacesRefused(t)
	}
	require.False(t, ipcNamespaceAllowed(), "this worker cannot make an IPC namespace")
	_, name := ipcNames()
	require.Equal(t, "shm:ok\nmsg:ok\nsem:ok\nmq:ok\n", hostProbe(t, -1, "private", name), "control: the same user makes each outside a sandbox")
	r := llRunner(t, 1_900_103_050)
	res, out := llRunSpec(t, r, Spec{Argv: ipcProbeArgv("private", name)})
	require.Equal(t, 0, res.ExitCode, out)
	require.Equal(t, "shm:EPERM\nmsg:EPERM\nsem:EPERM\nmq:EPERM\n", out)
}
