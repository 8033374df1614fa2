package sandbox

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// makeInotify is a python3 program that makes inotify instances until
// one is refused or its first argument's number exist, prints how many
// and the error, and with a second argument waits for a line on stdin.
const makeInotify = `
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
n, most, err, fds = 0, int(sys.argv[1]), "none", []
while n < most:
    fd = libc.inotify_init1(0)
    if fd < 0:
        err = errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
        break
    fds.append(fd)
    n += 1
print(n, err, flush=True)
if len(sys.argv) > 2:
    sys.stdin.readline()
`

// TestInotifyIsBoundedPerSandbox: a namespace-mode run makes at most 16
// inotify instances (its user namespace's bound; the kernel charges them
// to the worker user's count as well), where a host process of the same
// user makes 40 (the control); while one run holds its 16, another run
// makes its own.
func TestInotifyIsBoundedPerSandbox(t *testing.T) {
	out, err := exec.Command("/usr/bin/python3", "-c", makeInotify, "40").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "40 none\n", string(out), "control: a host process makes more than a sandbox may")

	r := nsRunner(t)
	stdout := sandboxtest.NewLineWatch("16 EMFILE")
	stdinR, stdinW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		res, err := r.Run(context.Background(), Spec{Argv: []string{"/usr/bin/python3", "-c", makeInotify, "40", "hold"},
			Isolation: IsolationNamespace, Stdin: stdinR, Stdout: stdout, Limits: Limits{Wall: 2 * time.Minute}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("the filling run: %+v", res)
		}
		done <- err
	}()
	select {
	case <-stdout.Seen():
	case err := <-done:
		t.Fatalf("the filling run ended first: %v, stdout %q", err, stdout.String())
	case <-time.After(time.Minute):
		t.Fatalf("the filling run was not stopped at 16: stdout %q", stdout.String())
	}
	o := modeRun(t, r, IsolationNamespace, Spec{Argv: []string{"/usr/bin/python3", "-c", makeInotify, "4"}})
	require.Equal(t, 0, o.res.ExitCode, o.stderr)
	require.Equal(t, "4 none", strings.TrimSpace(o.stdout), "another run makes its own beside a full one")
	require.NoError(t, stdinW.Close())
	require.NoError(t, <-done)
}
