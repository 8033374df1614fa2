package sandboxtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warrenhq/warren/sandbox/initproc"
)

// Bwrap is the bubblewrap binary, the benchmarks' baseline; without it
// the benchmark is skipped.
func Bwrap(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("bwrap")
	if err != nil {
		tb.Skip("bwrap not installed (apt-get install bubblewrap): no baseline to compare with")
	}
	return p
}

// ScratchRoot is a new directory for a Runner's scratch root (or bwrap's
// scratch), removed at the test's end: mode 0711 and outside TempDir,
// whose parent is 0700, so that sandbox uids can traverse to their homes.
func ScratchRoot(tb testing.TB) string {
	tb.Helper()
	root, err := os.MkdirTemp("", "warren-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		tb.Fatal(err)
	}
	return root
}

// BwrapArgs gives bwrap the view of namespace mode, running argv: ro /usr
// with the /bin /lib /lib64 /sbin links, the etc files given (those that
// exist), the five devices, private /dev/shm and noexec /tmp, a fresh
// /proc, one rw scratch as its home and cwd, all namespaces, its own
// session, dying with its parent.
func BwrapArgs(scratch string, etc []string, argv ...string) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
		"--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", scratch, "--setenv", "TMPDIR", "/tmp",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin"}
	for _, f := range etc {
		if _, err := os.Stat(f); err == nil {
			args = append(args, "--ro-bind", f, f)
		}
	}
	for _, d := range initproc.ViewDevices {
		args = append(args, "--dev-bind", d, d)
	}
	args = append(args, "--tmpfs", "/dev/shm", "--tmpfs", "/tmp", "--proc", "/proc",
		"--bind", scratch, scratch, "--chdir", scratch, "--remount-ro", "/")
	return append(args, argv...)
}

// MachineCPU is the machine's busy time so far: every CPU's user, nice,
// system, irq and softirq time (/proc/stat's first line, USER_HZ ticks).
// Benchmarks take differences of it: it counts what a process's own
// rusage misses (a slot's task inits are reaped by the slot parent; the
// kernel's deferred work, such as a network namespace's teardown, runs in
// kworkers).
func MachineCPU(tb testing.TB) time.Duration {
	tb.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		tb.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		tb.Fatalf("/proc/stat: %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}
