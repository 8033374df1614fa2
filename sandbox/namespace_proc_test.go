package sandbox

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestNoNewPrivsNoCapabilitiesNonZeroUIDNoCore(t *testing.T) {
	r, uid := oneUIDRunner(t)
	probe := sh(`grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; ulimit -c; ulimit -H -c`)
	_, out := runOut(t, probe...)
	require.Contains(t, out, "NoNewPrivs:\t0", "control: the host child may gain privileges")

	o := runIn(t, r, Spec{Argv: probe})
	st := o.stdout
	for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		require.Contains(t, st, c+":\t0000000000000000", st)
	}
	require.Contains(t, st, "NoNewPrivs:\t1")
	require.True(t, strings.HasSuffix(st, "0\n0\n"), "RLIMIT_CORE soft and hard 0: %q", st)
	require.NotZero(t, uid)
	require.Contains(t, st, fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d", uid, uid, uid, uid))
	if os.Geteuid() == 0 {
		require.Contains(t, st, "Groups:\t \n", "root's supplementary groups are dropped")
	}
}

// oneUIDRunner is a namespace runner whose sandboxes all run as one known
// uid (root: a one-uid range; otherwise the user's own).
func oneUIDRunner(t *testing.T) (*Runner, uint32) {
	t.Helper()
	r := nsRunner(t)
	if os.Geteuid() != 0 {
		return r, uint32(os.Getuid())
	}
	base := uint32(1_950_000_000 + rand.IntN(1_000_000))
	r2, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: r.cfg.ScratchRoot, UIDBase: base, UIDCount: 1})
	require.NoError(t, err)
	r2.noLayer.Store(true)
	return r2, base
}

func TestSameUIDProcessIsInvisibleAndUnsignalable(t *testing.T) {
	r, uid := oneUIDRunner(t)
	// A live host process of the sandbox's own uid, with a secret in its env.
	victim := exec.Command("/bin/sleep", "300")
	victim.Env = []string{"VICTIM_SECRET=s3cret"}
	if os.Geteuid() == 0 {
		victim.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	require.NoError(t, victim.Start())
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	pid := victim.Process.Pid
	probe := py(fmt.Sprintf(`
import os
try:
    os.kill(%d, 0); print("signal OK")
except OSError as e:
    print("signal ERR", e.errno)
try:
    print("environ OK", open("/proc/%d/environ").read())
except OSError as e:
    print("environ ERR", e.errno)
print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
`, pid, pid))

	// Control: the same probe as the same uid on the host.
	ctl := exec.Command(probe[0], probe[1:]...)
	if os.Geteuid() == 0 {
		ctl.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	out, err := ctl.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "signal OK")
	require.Contains(t, string(out), "environ OK VICTIM_SECRET=s3cret")

	o := runIn(t, r, Spec{Argv: probe})
	require.Contains(t, o.stdout, fmt.Sprintf("signal ERR %d", unix.ESRCH))
	require.Contains(t, o.stdout, fmt.Sprintf("environ ERR %d", unix.ENOENT))
	require.Contains(t, o.stdout, "pids [1]\n", "only the task itself is visible")
}

func TestOneSandboxCannotReachAnother(t *testing.T) {
	r, _ := oneUIDRunner(t)
	if os.Geteuid() == 0 {
		// Two concurrent runs need two uids; the first runner has a range.
		r = nsRunner(t)
	}
	name := fmt.Sprintf("warren-test-%d", rand.Int64())
	// Sandbox A: listens on an abstract socket, proves it can reach itself,
	// then waits until stdin closes.
	aScript := fmt.Sprintf(`
import socket, sys, os
s = socket.socket(socket.AF_UNIX); s.bind("\0%s"); s.listen()
c = socket.socket(socket.AF_UNIX); c.connect("\0%s"); print("self-connect OK", flush=True)
open(os.environ["HOME"] + "/a-marker", "w").write("a")
sys.stdin.read()
`, name, name)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	var aOut syncbuf.Buffer
	aDone := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), Spec{Argv: py(aScript), Stdin: pr, Stdout: &aOut, Limits: Limits{Wall: time.Minute}})
		aDone <- err
	}()
	t.Cleanup(func() { pw.Close(); <-aDone; pr.Close() })
	require.Eventually(t, func() bool { return strings.Contains(aOut.String(), "self-connect OK") }, 20*time.Second, 10*time.Millisecond)

	o := runIn(t, r, Spec{Argv: py(fmt.Sprintf(`
import socket, os, glob
try:
    c = socket.socket(socket.AF_UNIX); c.connect("\0%s"); print("connect OK")
except OSError as e:
    print("connect ERR", e.errno)
print("procs", [p for p in os.listdir("/proc") if p.isdigit()])
print("markers", glob.glob("/tmp/**/a-marker", recursive=True))
`, name))})
	require.Contains(t, o.stdout, fmt.Sprintf("connect ERR %d", unix.ECONNREFUSED))
	require.Contains(t, o.stdout, "procs ['1']")
	require.Contains(t, o.stdout, "markers []")
}

func TestNetworkIsNoneByDefault(t *testing.T) {
	r := nsRunner(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	// A host abstract unix socket.
	abs := fmt.Sprintf("@warren-host-%d", rand.Int64())
	ul, err := net.Listen("unix", abs)
	require.NoError(t, err)
	t.Cleanup(func() { ul.Close() })
	probe := py(fmt.Sprintf(`
import socket
for fam, addr in ((socket.AF_INET, ("127.0.0.1", %d)), (socket.AF_UNIX, "\0%s")):
    try:
        s = socket.socket(fam); s.settimeout(5); s.connect(addr); print("OK")
    except OSError as e:
        print("ERR", e.errno)
`, port, abs[1:]))

	_, out := runOut(t, probe...)
	require.Equal(t, "OK\nOK\n", out, "control: both reachable from the host")

	o := runIn(t, r, Spec{Argv: probe})
	require.Equal(t, fmt.Sprintf("ERR %d\nERR %d\n", unix.ENETUNREACH, unix.ECONNREFUSED), o.stdout)

	t.Run("loopback", func(t *testing.T) {
		// lo is up and private: the sandbox reaches its own listener, not
		// the host's.
		o := runIn(t, r, Spec{Network: NetworkLoopback, Argv: py(fmt.Sprintf(`
import socket
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.socket(); c.connect(l.getsockname()); print("own OK")
try:
    s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", %d)); print("host OK")
except OSError as e:
    print("host ERR", e.errno)
`, port))})
		require.Equal(t, fmt.Sprintf("own OK\nhost ERR %d\n", unix.ECONNREFUSED), o.stdout)
	})
}

func TestOwnSessionAndProcessGroup(t *testing.T) {
	r := nsRunner(t)
	probe := py(`import os; print(os.getpid() == os.getsid(0) == os.getpgid(0))`)
	_, out := runOut(t, probe...)
	require.Equal(t, "False\n", out, "control: a plain child shares the worker's session")
	o := runIn(t, r, Spec{Argv: probe})
	require.Equal(t, "True\n", o.stdout)
}

func TestHostnameIsPrivate(t *testing.T) {
	r := nsRunner(t)
	o := runIn(t, r, Spec{Argv: sh("hostname")})
	require.Equal(t, "warren\n", o.stdout)
}

func TestRunAsRootUsesPoolUIDAndUnprivilegedMapsOwnUID(t *testing.T) {
	r := nsRunner(t)
	o := runIn(t, r, Spec{Argv: sh("id -u; id -g; stat -c %u $HOME")})
	f := strings.Fields(o.stdout)
	require.Len(t, f, 3)
	uid, err := strconv.ParseUint(f[0], 10, 32)
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		require.GreaterOrEqual(t, uint32(uid), r.cfg.UIDBase)
		require.Less(t, uint32(uid), r.cfg.UIDBase+r.cfg.UIDCount)
		require.Equal(t, f[0], f[1], "gid = uid")
	} else {
		require.Equal(t, uint64(os.Getuid()), uid)
		require.Equal(t, strconv.Itoa(os.Getgid()), f[1])
	}
	require.Equal(t, f[0], f[2], "scratch belongs to the sandbox uid")
}

func TestNestedUserNamespacesAreRefused(t *testing.T) {
	r := nsRunner(t)
	probe := sh("unshare --user --map-current-user true && echo nested-ok")
	_, out := runOut(t, probe...)
	require.Contains(t, out, "nested-ok", "control: the worker's user may create user namespaces")
	o := runIn(t, r, Spec{Argv: probe})
	require.NotContains(t, o.stdout, "nested-ok")
	require.Contains(t, o.stderr, "No space left on device", "max_user_namespaces is 0 inside")
}

func TestRootWorkersSupplementaryGroupsAreDropped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("an ordinary worker's groups stay by design (1:1 mapping of that user; setgroups is denied in its user namespace)")
	}
	r := nsRunner(t)
	run := func(args ...string) string {
		cmd := exec.Command("/proc/self/exe", "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=status", "WARREN_SANDBOX_TEST_ROOT="+r.cfg.ScratchRoot)
		// A worker with supplementary groups, as root often has (e.g. disk).
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{6, 4242}}}
		if len(args) > 0 {
			cmd = exec.Command(args[0], args[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{6, 4242}}}
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	require.Contains(t, run("/bin/grep", "Groups", "/proc/self/status"), "Groups:\t6 4242", "control: a plain child keeps them")
	require.Contains(t, run(), "Groups:\t \n", "the sandbox has none")
}
