package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a fresh pseudo-terminal pair, its window set to 24x80.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = master.Close() })
	fd := int(master.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)) // unlockpt
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)                       // ptsname
	require.NoError(t, err)
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = slave.Close() })
	require.NoError(t, unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}))
	return master, slave
}

// ptyState is what a task could change on a terminal: its echo flag and
// its window size.
func ptyState(t *testing.T, slave *os.File) (echo bool, ws unix.Winsize) {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	require.NoError(t, err)
	w, err := unix.IoctlGetWinsize(int(slave.Fd()), unix.TIOCGWINSZ)
	require.NoError(t, err)
	return tio.Lflag&unix.ECHO != 0, *w
}

// ttyProbe turns echo off (stty -echo) and sets the window size to 33x44
// on each of its stdio descriptors that is a terminal, then prints what it
// read from stdin up to EOF.
const ttyProbe = `import fcntl, struct, sys, termios
for fd in (0, 1, 2):
    try:
        a = termios.tcgetattr(fd)
        a[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, a)
        print("echo-off", fd)
    except Exception as e:
        print("echo", fd, e)
    try:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 44, 0, 0))
        print("winsize-set", fd)
    except Exception as e:
        print("winsize", fd, e)
print("read:", sys.stdin.read().strip())
`

// TestTerminalNotInherited: a task whose stdin or stderr is a terminal
// does not get the terminal's descriptor: it gets pipes the worker copies,
// so it can neither turn echo off nor resize the window (the terminal's
// state is unchanged after the run), in namespace mode (with and without
// the layer) and Landlock mode; what the caller typed still reaches it, up
// to EOF (^D), and its output is all copied. The control, the same probe
// run directly with the terminal as stdin, changes both.
func TestTerminalNotInherited(t *testing.T) {
	master, slave := openPTY(t)
	_, err := master.Write([]byte("hello\n\x04"))
	require.NoError(t, err)
	var out bytes.Buffer
	cmd := exec.Command(python, "-c", ttyProbe)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &out
	require.NoError(t, cmd.Run(), out.String())
	require.Contains(t, out.String(), "read: hello")
	echo, ws := ptyState(t, slave)
	require.False(t, echo, "control: the probe turns echo off: %s", out.String())
	require.Equal(t, unix.Winsize{Row: 33, Col: 44}, ws, "control: the probe resizes the window")

	modes := []struct {
		name, inForce string
		runner        func(t *testing.T) *Runner
	}{
		{"namespace", "namespace", nsRunner},
		{"layered", layersLayered.String(), func(t *testing.T) *Runner {
			llRequire(t, 6)
			r := nsRunner(t)
			r.noLayer.Store(false)
			return r
		}},
		{"landlock", layersLandlockOnly.String(), func(t *testing.T) *Runner {
			llRequire(t, 6)
			r := llRunner(t, 1_900_100_940)
			t.Cleanup(func() { _ = r.Close() })
			return r
		}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			r := m.runner(t)
			for _, which := range []string{"stdin", "stderr"} {
				t.Run(which, func(t *testing.T) {
					master, slave := openPTY(t)
					spec := Spec{Argv: py(ttyProbe), Limits: Limits{Wall: 30 * time.Second}}
					if m.name == "landlock" {
						spec.Isolation = IsolationLandlock
					}
					var stdout, stderr bytes.Buffer
					spec.Stdout, spec.Stderr = &stdout, &stderr
					if which == "stdin" {
						_, err := master.Write([]byte("hello\n\x04"))
						require.NoError(t, err)
						spec.Stdin = slave
					} else {
						spec.Stderr = slave
					}
					res, err := r.Run(context.Background(), spec)
					require.NoError(t, err, stderr.String())
					require.Equal(t, m.inForce, res.InForce)
					require.Equal(t, 0, res.ExitCode, "%s%s", stdout.String(), stderr.String())
					require.NotContains(t, stdout.String(), "echo-off")
					require.NotContains(t, stdout.String(), "winsize-set")
					if which == "stdin" {
						require.Contains(t, stdout.String(), "read: hello", "stdin copied up to EOF")
					} else {
						require.Contains(t, stdout.String(), "read: \n", "no stdin reads as empty")
					}
					echo, ws := ptyState(t, slave)
					require.True(t, echo, "echo left on")
					require.Equal(t, unix.Winsize{Row: 24, Col: 80}, ws, "window size unchanged")
				})
			}
		})
	}
}
