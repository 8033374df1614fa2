package reap

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// traceme is a child whose non-main thread makes this process its tracer
// and exits; the child then exits too (trick) or only exits (control).
const traceme = `import ctypes, os, sys, threading
if sys.argv[1] == "on":
    libc = ctypes.CDLL(None)
    t = threading.Thread(target=lambda: libc.ptrace(0, 0, None, None))
    t.start(); t.join()
os._exit(3)
`

// TestTracedThreadsHoldTheEndBack: a child that exits leaving a thread
// traced by this process is never reported ended, until TracedThreads
// reaps that thread; the control is reported ended by itself. Its end is
// then collected with its status.
func TestTracedThreadsHoldTheEndBack(t *testing.T) {
	for _, on := range []bool{false, true} {
		arg := map[bool]string{false: "off", true: "on"}[on]
		cmd := exec.Command("/usr/bin/python3", "-c", traceme, arg)
		require.NoError(t, cmd.Start())
		pid := cmd.Process.Pid
		// Every thread has exited: its end is reported, or held back by
		// the traced thread.
		require.Eventually(t, func() bool { return allZombies(pid) }, 10*time.Second, time.Millisecond)
		if !on {
			require.Eventually(t, func() bool { return Ended(pid) }, 10*time.Second, time.Millisecond, "control: reported ended")
		} else {
			require.False(t, Ended(pid), "the end reported before the traced thread is reaped")
			require.Equal(t, 1, TracedThreads(pid), "the traced thread is reaped")
			require.Eventually(t, func() bool { return Ended(pid) }, 10*time.Second, time.Millisecond)
		}
		require.Error(t, cmd.Wait())
		require.Equal(t, 3, cmd.ProcessState.ExitCode())
	}
}

// allZombies reports whether every thread of pid has exited (the leader
// included), as /proc shows them.
func allZombies(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, t := range tids {
		if !Zombie(pid) || !zombieTask(dir+t.Name()) {
			return false
		}
	}
	return true
}

func zombieTask(dir string) bool {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

func TestCodeEnded(t *testing.T) {
	for c, want := range map[Code]bool{Exited: true, Killed: true, Dumped: true, Trapped: false, Stopped: false, Continued: false} {
		require.Equal(t, want, c.Ended(), "code %d", c)
	}
}
