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

// queueSignals is a python3 program that queues real-time signals to
// itself (blocked, so they stay pending; tgkill, which is refused with
// EAGAIN past the limit where kill drops the signal's information
// silently) until one is refused or its first argument's number are
// queued, prints how many and the error,
// and with a second argument waits for a line on stdin before it exits.
const queueSignals = `
import errno, os, signal, sys, threading
sig, me = signal.SIGRTMIN, threading.get_ident()
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
n, most, err = 0, int(sys.argv[1]), "none"
try:
    while n < most:
        signal.pthread_kill(me, sig)
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(n, err, flush=True)
if len(sys.argv) > 2:
    sys.stdin.readline()
`

// TestPendingSignalsArePerSandbox: a run queues at most pendingSignals
// signals (RLIMIT_SIGPENDING), where a host process of the same user
// queues 5,000 (the control); and while one namespace-mode run holds all
// it may queue, another run queues its own (each has its own user
// namespace, so its own count).
func TestPendingSignalsArePerSandbox(t *testing.T) {
	out, err := exec.Command("/usr/bin/python3", "-c", queueSignals, "5000").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "5000 none\n", string(out), "control: a host process queues past the sandbox's bound")

	r := nsRunner(t)
	stdout := sandboxtest.NewLineWatch(fmt.Sprintf("%d EAGAIN", pendingSignals))
	stdinR, stdinW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		res, err := r.Run(context.Background(), Spec{Argv: []string{"/usr/bin/python3", "-c", queueSignals, "5000", "hold"},
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
		t.Fatalf("the filling run queued no %d signals: stdout %q", pendingSignals, stdout.String())
	}
	o := modeRun(t, r, IsolationNamespace, Spec{Argv: []string{"/usr/bin/python3", "-c", queueSignals, "100"}})
	require.Equal(t, 0, o.res.ExitCode, o.stderr)
	require.Equal(t, "100 none", strings.TrimSpace(o.stdout), "another run queues its own signals beside a full one")
	require.NoError(t, stdinW.Close())
	require.NoError(t, <-done)
}
