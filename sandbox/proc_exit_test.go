package sandbox

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// exitWatch.wait returns once its child has ended and leaves it to the
// caller's reap (the run's usage is read from the zombie first); it does
// not hang on a process that is already gone.
func TestExitWatchWaits(t *testing.T) {
	cmd := exec.Command("/bin/cat")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	returned := make(chan struct{})
	w := watchExit(cmd.Process.Pid)
	go func() { _ = w.wait(func() {}); w.close(); close(returned) }()
	select {
	case <-returned:
		t.Fatal("wait returned while its process was running")
	case <-time.After(100 * time.Millisecond): // a bounded look for a wrong early return, not a synchronisation
	}
	require.NoError(t, stdin.Close()) // cat ends at EOF
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return after its process ended")
	}
	// Not reaped: the zombie is still there for zombieCPU and Wait.
	var info unix.Siginfo
	require.NoError(t, unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil))
	require.NotZero(t, info.Signo, "the ended process must still be waitable")
	require.NoError(t, cmd.Wait())

	w = watchExit(cmd.Process.Pid) // reaped: returns at once
	defer w.close()
	require.NoError(t, w.wait(func() {}))
}
