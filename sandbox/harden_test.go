package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// isolationCase runs a Spec through one isolation mode of the Runner, the
// whole way (init, Landlock, seccomp, teardown), and names the layers it
// must report in force.
type isolationCase struct {
	name    string
	inForce string
	run     func(t *testing.T, spec Spec) probeOut
}

// hardenedModes are the modes whose seccomp filter the Landlock-only
// hardening extends: Landlock-only and layered.
func hardenedModes(t *testing.T) []isolationCase {
	t.Helper()
	return []isolationCase{
		{name: "landlock", inForce: layersLandlockOnly.String(), run: func(t *testing.T, spec Spec) probeOut {
			llRequire(t, 6)
			spec.Isolation = IsolationLandlock
			return runIn(t, llRunner(t, 1_900_100_400), spec)
		}},
		{name: "layered", inForce: layersLayered.String(), run: func(t *testing.T, spec Spec) probeOut {
			llRequire(t, 6)
			r := nsRunner(t)
			r.noLayer.Store(false)
			return runIn(t, r, spec)
		}},
	}
}

// cloneNewUser is a python3 program that clone(2)s with CLONE_NEWUSER
// (fork-like: the child exits at once) and prints clone-ok when that
// worked.
const cloneNewUser = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER|SIGCHLD)
if pid == 0:
    os._exit(0)
if pid < 0:
    raise SystemExit("clone: " + os.strerror(ctypes.get_errno()))
os.waitpid(pid, 0)
print("clone-ok")
`

// TestUserNamespacesRefused: creating a user namespace works on the host
// (the control) and is refused inside, by unshare(2) and by clone(2), in
// every mode: by seccomp (EPERM) in the Landlock-only and layered modes,
// by user.max_user_namespaces=0 in namespace mode alone (also
// TestNestedUserNamespacesAreRefused).
func TestUserNamespacesRefused(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	probes := []struct {
		name, ok string
		argv     []string
	}{
		{"unshare -U", "nested-ok", sh("unshare --user --map-current-user true && echo nested-ok")},
		{"clone CLONE_NEWUSER", "clone-ok", py(cloneNewUser)},
	}
	modes := append(hardenedModes(t), isolationCase{name: "namespace", inForce: "namespace", run: func(t *testing.T, spec Spec) probeOut {
		return runIn(t, nsRunner(t), spec)
	}})
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			_, out := runOut(t, p.argv...)
			require.Contains(t, out, p.ok, "control: the worker's user may create user namespaces")
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					o := m.run(t, Spec{Argv: p.argv})
					require.Equal(t, m.inForce, o.res.InForce)
					require.NotContains(t, o.stdout, p.ok, o.stderr)
					require.NotEqual(t, 0, o.res.ExitCode, o.stderr)
					want := "Operation not permitted"
					if m.name == "namespace" {
						want = "No space left on device"
					}
					require.Contains(t, o.stderr, want)
				})
			}
		})
	}
}

// TestHostUnixSocketRefused: a live pathname socket of the host in /tmp,
// which the control connects to from outside, cannot be connected to from
// inside: seccomp refuses AF_UNIX socket(2) (Landlock ABI < 9 does not
// govern connect on socket files). The socket's directory is also the
// run's toolchain path, so in layered mode it is inside the view too (a
// read-only bind mount does not stop connect): seccomp alone refuses it.
// With Spec.UnixSockets a unix socket in the task's own home works.
func TestHostUnixSocketRefused(t *testing.T) {
	dir, err := os.MkdirTemp("", "warren-h13sock-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, os.Chmod(sock, 0o777)) // any sandbox uid may connect
	go acceptAll(l)

	connect := py(fmt.Sprintf("import socket\ns = socket.socket(socket.AF_UNIX); s.connect(%q); print('connect-ok')", sock))
	_, out := runOut(t, connect...)
	require.Contains(t, out, "connect-ok", "control: the host socket accepts connections")
	own := py("import socket, os\n" +
		"p = os.environ['HOME'] + '/s'; l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen()\n" +
		"c = socket.socket(socket.AF_UNIX); c.connect(p); l.accept(); print('own-ok')")
	for _, m := range hardenedModes(t) {
		t.Run(m.name, func(t *testing.T) {
			o := m.run(t, Spec{Argv: connect, ReadOnly: []string{dir}})
			require.Equal(t, m.inForce, o.res.InForce)
			require.NotContains(t, o.stdout, "connect-ok", o.stderr)
			require.Contains(t, o.stderr, "Address family not supported")

			o = m.run(t, Spec{Argv: own})
			require.NotContains(t, o.stdout, "own-ok", "without the opt-in: %s", o.stderr)
			o = m.run(t, Spec{Argv: own, UnixSockets: true})
			require.Contains(t, o.stdout, "own-ok", "with the opt-in: %s", o.stderr)
		})
	}
}

// llOrdinaryRunner is a Landlock-mode Runner as an ordinary-user worker
// has it, whoever runs the test: no pool uid (the runs share the test's
// uid) and no cgroup, so only the orphan sweep can catch a leftover.
func llOrdinaryRunner(t *testing.T) *Runner {
	t.Helper()
	llRequire(t, 6)
	r := llRunner(t, 1_900_100_500)
	r.pool = nil
	r.cgroups = cgroup.Support{}
	return r
}

// escapeScript starts a setsid daemon that writes its pid to $HOME/<name>
// after leaving the group, waits for that, and prints the pid.
func escapeScript(name string, doubleFork bool) string {
	d := `setsid sh -c 'echo $$ > "$HOME/` + name + `"; exec sleep 300' </dev/null >/dev/null 2>&1 &`
	if doubleFork {
		d = "(" + d + ");"
	}
	return d + ` while [ ! -s "$HOME/` + name + `" ]; do :; done; cat "$HOME/` + name + `"; `
}

// requireGone polls until pid is gone (reaped: a zombie still answers
// kill 0).
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH }, 5*time.Second, 10*time.Millisecond,
		"process %d of the run outlives it", pid)
}

func outPID(t *testing.T, out string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]))
	require.NoError(t, err, out)
	return pid
}

// TestLandlockModeSweepsOrphansOfOrdinaryUser: a setsid daemon outlives
// its process group outside a sandbox (the control), but not a
// Landlock-only run of an ordinary-user worker (no pid namespace, no
// cgroup, no uid of its own): not when the task exits, not when the wall
// limit kills it. A double-forked daemon of a run that is still going is
// not touched by another run's teardown: it stays the task's child.
func TestLandlockModeSweepsOrphansOfOrdinaryUser(t *testing.T) {
	ctlHome := llTempDir(t, 0o700)
	ctl := exec.Command("/bin/sh", "-c", escapeScript("esc", false))
	ctl.Env = []string{"HOME=" + ctlHome}
	ctl.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := ctl.Output()
	require.NoError(t, err)
	pid := outPID(t, string(out))
	_ = syscall.Kill(-ctl.Process.Pid, syscall.SIGKILL)
	require.NoError(t, syscall.Kill(pid, 0), "control: the escapee outlives its group")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	r := llOrdinaryRunner(t)
	t.Run("task exits", func(t *testing.T) {
		o := runIn(t, r, Spec{Argv: sh(escapeScript("esc", false)), Isolation: IsolationLandlock})
		require.Equal(t, 0, o.res.ExitCode, o.stderr)
		requireGone(t, outPID(t, o.stdout))
	})
	t.Run("wall limit", func(t *testing.T) {
		o := runIn(t, r, Spec{Argv: sh(escapeScript("esc", true) + "exec sleep 300"), Isolation: IsolationLandlock,
			Limits: Limits{Wall: 2 * time.Second}})
		require.True(t, o.res.TimedOut, o.stderr)
		requireGone(t, outPID(t, o.stdout))
	})
	t.Run("a running task keeps its daemon", func(t *testing.T) {
		stdinR, stdinW := io.Pipe()
		t.Cleanup(func() { stdinW.Close() })
		outR, outW := io.Pipe()
		t.Cleanup(func() { outR.Close() })
		done := make(chan error, 1)
		go func() {
			_, err := r.Run(context.Background(), Spec{Argv: sh(escapeScript("d", true) + "read x"), Isolation: IsolationLandlock,
				Stdin: stdinR, Stdout: outW, Limits: Limits{Wall: 30 * time.Second}})
			outW.Close()
			done <- err
		}()
		line, err := bufio.NewReader(outR).ReadString('\n')
		require.NoError(t, err)
		daemon := outPID(t, line)
		o := runIn(t, r, Spec{Argv: []string{"/bin/true"}, Isolation: IsolationLandlock}) // its teardown sweeps
		require.Equal(t, 0, o.res.ExitCode, o.stderr)
		require.NoError(t, syscall.Kill(daemon, 0), "another run's teardown must not kill a running task's daemon")
		stdinW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		require.NoError(t, <-done)
		requireGone(t, daemon)
	})
}

// TestStaticGoBinaryRunsUnderTheFilter: a static Go program (the suite's
// CGO_ENABLED=0 init, run by hand: it starts its runtime threads with
// clone, then says it has no config) runs under the filter that refuses
// clone3 and CLONE_NEWUSER. glibc's clone3 fallback (pthread_create,
// posix_spawn) is covered by TestLandlockAllows.
func TestStaticGoBinaryRunsUnderTheFilter(t *testing.T) {
	if testInitPath == "" {
		t.Skip("no prebuilt static init (no Go toolchain)")
	}
	// A private copy: the binary's own directory (/tmp in `make
	// test-sandbox-unpriv`) may hold other tests' mounts, which a bind in
	// a user namespace cannot leave out.
	bin, err := os.ReadFile(testInitPath)
	require.NoError(t, err)
	initCopy := filepath.Join(hostDir(t), "warren-sandbox-init")
	require.NoError(t, os.WriteFile(initCopy, bin, 0o755))
	for _, m := range hardenedModes(t) {
		t.Run(m.name, func(t *testing.T) {
			o := m.run(t, Spec{Argv: []string{initCopy}, ReadOnly: []string{filepath.Dir(initCopy)}})
			require.Equal(t, m.inForce, o.res.InForce)
			require.Equal(t, 125, o.res.ExitCode, o.stderr)
			require.Contains(t, o.stderr, "started by the warren worker only")
		})
	}
}

// personalityProbe queries the execution domain (personality(0xffffffff)),
// sets PER_LINUX (personality(0)), then asks for ADDR_NO_RANDOMIZE |
// READ_IMPLIES_EXEC, and prints what each returned.
const personalityProbe = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.personality.argtypes = [ctypes.c_ulong]
def call(v):
    r = libc.personality(v)
    return r if r >= 0 else "error " + os.strerror(ctypes.get_errno())
print("query", call(0xffffffff))
print("linux", call(0))
r = call(0x0040000 | 0x0400000)
print("weaken", "refused: " + r if isinstance(r, str) else "ok")
print("now", hex(call(0xffffffff)))
`

// TestPersonalityLimited: personality(2) with ADDR_NO_RANDOMIZE |
// READ_IMPLIES_EXEC (no ASLR, executable data for what the task execs)
// works on the host (the control) and is refused with EPERM by seccomp
// in the Landlock-only and layered modes, where the query
// (0xffffffff) and PER_LINUX still work. Namespace mode alone has no
// seccomp filter (docs/sandbox-design.md, "Limitations").
func TestPersonalityLimited(t *testing.T) {
	_, out := runOut(t, py(personalityProbe)...)
	require.Contains(t, out, "weaken ok", "control: the host lets a process change its personality")
	require.Contains(t, out, "now 0x440000", "control")
	for _, m := range hardenedModes(t) {
		t.Run(m.name, func(t *testing.T) {
			o := m.run(t, Spec{Argv: py(personalityProbe)})
			require.Equal(t, m.inForce, o.res.InForce)
			require.Equal(t, 0, o.res.ExitCode, o.stderr)
			require.Contains(t, o.stdout, "query 0\n", o.stderr)
			require.Contains(t, o.stdout, "linux 0\n")
			require.Contains(t, o.stdout, "weaken refused: error Operation not permitted\n")
			require.Contains(t, o.stdout, "now 0x0\n")
		})
	}
}
