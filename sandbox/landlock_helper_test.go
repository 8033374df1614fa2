package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The Landlock tests re-exec the test binary: in "child" mode it applies a
// policy (a stand-in for the sandbox init's last step) and execs argv; in
// "probe" mode it performs one operation and exits 0 when it succeeded, 3
// when it was denied. An init function (not TestMain, which the package
// shares) dispatches before the test framework starts.
const (
	llEnvChild   = "WARREN_LLTEST_CHILD" // JSON policy ("null": none)
	llEnvProbe   = "WARREN_LLTEST_PROBE" // set: run a probe
	llExitDenied = 3
)

func init() {
	if pol, ok := os.LookupEnv(llEnvChild); ok {
		llChildMain(pol)
	}
	if _, ok := os.LookupEnv(llEnvProbe); ok {
		os.Exit(llProbeMain(os.Args[1:]))
	}
}

func llChildMain(polJSON string) {
	_ = os.Unsetenv(llEnvChild)
	var p *landlockPolicy
	if err := json.Unmarshal([]byte(polJSON), &p); err != nil {
		fmt.Fprintln(os.Stderr, "child: policy:", err)
		os.Exit(100)
	}
	if p != nil {
		if err := applyLandlock(p); err != nil {
			fmt.Fprintln(os.Stderr, "child: apply:", err)
			if errors.Is(err, ErrUnavailable) {
				os.Exit(101)
			}
			os.Exit(102)
		}
	}
	argv := os.Args[1:]
	path := argv[0]
	if !strings.Contains(path, "/") {
		lp, err := exec.LookPath(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child: lookpath:", err)
			os.Exit(103)
		}
		path = lp
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintln(os.Stderr, "child: exec:", err)
	os.Exit(104)
}

// llProbes are the operations the boundary tests try. Each returns nil when
// the operation succeeded.
var llProbes = map[string]func(args []string) error{
	"read": func(a []string) error { _, err := os.ReadFile(a[0]); return err },
	"write": func(a []string) error {
		return os.WriteFile(a[0], []byte("x"), 0o600)
	},
	"list":     func(a []string) error { _, err := os.ReadDir(a[0]); return err },
	"readlink": func(a []string) error { _, err := os.Readlink(a[0]); return err },
	"mkdir":    func(a []string) error { return os.Mkdir(a[0], 0o700) },
	"truncate": func(a []string) error { return os.Truncate(a[0], 0) },
	// openw opens for writing without changing anything (safe on /etc/passwd).
	"openw": func(a []string) error {
		f, err := os.OpenFile(a[0], os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return err
	},
	"exec": func(a []string) error {
		return exec.Command(a[0], a[1:]...).Run()
	},
	"tcp-bind": func(a []string) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	},
	"tcp-connect": func(a []string) error {
		c, err := net.DialTimeout("tcp", a[0], 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	},
	"socket": func(a []string) error {
		fam, _ := strconv.Atoi(a[0])
		typ, _ := strconv.Atoi(a[1])
		proto, _ := strconv.Atoi(a[2])
		fd, err := unix.Socket(fam, typ, proto)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"udp-send": func(a []string) error {
		c, err := net.Dial("udp", a[0])
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("x"))
		return err
	},
	"unix-connect": func(a []string) error {
		c, err := net.Dial("unix", a[0])
		if err == nil {
			c.Close()
		}
		return err
	},
	"abstract-connect": func(a []string) error {
		c, err := net.Dial("unix", "@"+a[0])
		if err == nil {
			c.Close()
		}
		return err
	},
	"kill": func(a []string) error {
		pid, _ := strconv.Atoi(a[0])
		return unix.Kill(pid, unix.SIGCONT)
	},
	"ptrace": func(a []string) error {
		pid, _ := strconv.Atoi(a[0])
		runtime.LockOSThread()
		// The tracee is released when the probe exits.
		return unix.PtraceSeize(pid)
	},
	// clone-user starts /bin/true in a new user namespace (clone(2) with
	// CLONE_NEWUSER, the way Go's os/exec does it).
	"clone-user": func(a []string) error {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
		return cmd.Run()
	},
	// clone3 reaches the kernel's clone3 with a bad size: EINVAL means the
	// call got through (nothing is created), ENOSYS that it was refused.
	"clone3": func(a []string) error {
		_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
		if e == unix.EINVAL {
			return nil
		}
		return e
	},
	// threads runs goroutines on fresh OS threads (clone without
	// CLONE_NEWUSER) and starts a child process.
	"threads": func(a []string) error {
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				runtime.LockOSThread() // a thread of its own, retired at exit
				errs <- exec.Command("/bin/true").Run()
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				return err
			}
		}
		return nil
	},
	"keyctl": func(a []string) error {
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, false)
		return err
	},
	// serve listens on an abstract socket, says "ready <pid>" and blocks on
	// stdin: the victim of the cross-sandbox tests.
	"serve": func(a []string) error {
		serve := func(addr string) error {
			l, err := net.Listen("unix", addr)
			if err != nil {
				return err
			}
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			return nil
		}
		if err := serve("@" + a[0]); err != nil {
			return err
		}
		if len(a) > 1 {
			if err := serve(a[1]); err != nil {
				return err
			}
		}
		fmt.Printf("ready %d\n", os.Getpid())
		_, _ = io.Copy(io.Discard, os.Stdin)
		return nil
	},
}

func llProbeMain(args []string) int {
	if len(args) == 0 {
		return 2
	}
	f, ok := llProbes[args[0]]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown probe", args[0])
		return 2
	}
	if err := f(args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "probe %s: %v\n", args[0], err)
		return llExitDenied
	}
	return 0
}

// llTestBinary copies the test binary to a world-readable place, so a
// child running under another uid can exec it; removed at cleanup.
func llTestBinary(t *testing.T) string {
	t.Helper()
	dir := llTempDir(t, 0o755)
	src, err := os.ReadFile("/proc/self/exe")
	require.NoError(t, err)
	bin := filepath.Join(dir, "sandbox.test")
	require.NoError(t, os.WriteFile(bin, src, 0o755))
	return bin
}

// llTempDir is a temporary directory with the given mode whose parents any
// uid can traverse (t.TempDir's parent is 0700).
func llTempDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "warren-lltest-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, mode))
	return dir
}

// llSandbox is one test sandbox: a home and a uid.
type llSandbox struct {
	home string
	uid  int    // -1: the test's own uid
	bin  string // the test binary copy (llTestBinary)
}

// llNewSandbox makes a private 0700 home owned by uid (-1: own uid).
func llNewSandbox(t *testing.T, bin string, uid int) llSandbox {
	t.Helper()
	base := llTempDir(t, 0o711)
	home := filepath.Join(base, "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(home, ".tmp"), 0o700))
	if uid >= 0 {
		require.NoError(t, filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		}))
	}
	return llSandbox{home: home, uid: uid, bin: bin}
}

// policy is the Landlock-mode policy of this sandbox, plus exec on the
// test binary (the probe).
func (s llSandbox) policy(t *testing.T, network Network) *landlockPolicy {
	p := newLandlockPolicy(landlockView{Home: s.home, Network: network, MinABI: 6})
	p.ReadExec = append(p.ReadExec, s.bin)
	return p
}

// unixPolicy is policy with network none and the AF_UNIX opt-in
// (Spec.UnixSockets).
func (s llSandbox) unixPolicy(t *testing.T) *landlockPolicy {
	p := newLandlockPolicy(landlockView{Home: s.home, Network: NetworkNone, UnixSockets: true, MinABI: 6})
	p.ReadExec = append(p.ReadExec, s.bin)
	return p
}

// command builds the child command: apply p (nil: no sandbox, the
// control) then exec argv; argv[0] == "probe" runs a probe.
func (s llSandbox) command(t *testing.T, p *landlockPolicy, argv ...string) *exec.Cmd {
	t.Helper()
	bin := s.bin
	pol, err := json.Marshal(p)
	require.NoError(t, err)
	env := []string{llEnvChild + "=" + string(pol), "HOME=" + s.home, "TMPDIR=" + filepath.Join(s.home, ".tmp"),
		"PATH=/usr/local/bin:/usr/bin:/bin", "WARREN_SECRET=hunter2"}
	if argv[0] == "probe" {
		argv = append([]string{bin}, argv[1:]...)
		env = append(env, llEnvProbe+"=1")
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = env
	cmd.Dir = s.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.uid >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(s.uid), Gid: uint32(s.uid), Groups: []uint32{}}
	}
	return cmd
}

// run runs argv under p and returns the exit code and combined output.
func (s llSandbox) run(t *testing.T, p *landlockPolicy, argv ...string) (int, string) {
	t.Helper()
	cmd := s.command(t, p, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// serve starts a victim sandbox serving abstract socket name and the
// pathname socket home/sock; it returns its pid and stops it at cleanup.
func (s llSandbox) serve(t *testing.T, p *landlockPolicy, name string) int {
	t.Helper()
	cmd := s.command(t, p, "probe", "serve", name, filepath.Join(s.home, "sock"))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "victim did not start")
	var pid int
	_, err = fmt.Sscanf(line, "ready %d", &pid)
	require.NoError(t, err, line)
	return pid
}

// llRequire skips when Landlock or the ABI floor is missing, except in CI
// where a missing kernel feature is a failure.
func llRequire(t *testing.T, minABI int) {
	t.Helper()
	abi := landlockABI()
	if abi.Effective >= minABI {
		return
	}
	msg := fmt.Sprintf("needs Landlock ABI >= %d, host has %d", minABI, abi.Effective)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// llTestUIDs returns the uids for two sandboxes: distinct pool-like uids as
// root (the root model), the own uid twice otherwise (the ordinary-user
// model, where only Landlock domains separate them).
func llTestUIDs(sameUID bool) (int, int) {
	if os.Geteuid() != 0 {
		return -1, -1
	}
	if sameUID {
		return 65534, 65534
	}
	return 64901, 64902
}
