package ident

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// TestKillAllTakesAPIDHopper: a process of a uid that changes its pid
// without end (sandboxtest's hopper, in a new session at every hop) goes
// on hopping once the process started and its session are killed (the
// control), and KillAll ends it at once: its stdout, which every process
// of it holds, reaches its end. A process of another uid is left alone.
func TestKillAllTakesAPIDHopper(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("KillAll takes a sandbox uid: a root worker's (make test runs this as root)")
	}
	const uid, other = 1_900_104_000, 1_900_104_001
	t.Cleanup(func() { _ = KillAll(uid); _ = KillAll(other) })
	cred := func(uid uint32) *syscall.SysProcAttr {
		return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}, Setsid: true}
	}
	h := exec.Command(sandboxtest.Hopper(t), "warren-kill-all")
	h.SysProcAttr = cred(uid)
	out, err := h.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, h.Start())
	t.Cleanup(func() { _ = h.Wait() })
	bystander := exec.Command("/bin/sleep", "60")
	bystander.SysProcAttr = cred(other)
	require.NoError(t, bystander.Start())
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })

	dots := make(chan int, 1024) // bytes read; closed at the end of stdout
	go func() {
		defer close(dots)
		buf := make([]byte, 4096)
		for {
			n, err := out.Read(buf)
			if n > 0 {
				dots <- n
			}
			if err != nil {
				t.Logf("hopper's stdout: %v", err)
				return
			}
		}
	}()
	hops := func(what string) {
		t.Helper()
		select {
		case _, ok := <-dots:
			require.True(t, ok, what)
		case <-time.After(10 * time.Second):
			t.Fatal(what)
		}
	}
	hops("the hopper is ready")
	hops("the hopper hops")

	// Control: the process started and its session killed, the hopper
	// (in sessions of its own) goes on.
	require.NoError(t, unix.Kill(-h.Process.Pid, unix.SIGKILL))
	for len(dots) > 0 {
		<-dots
	}
	hops("control: the hopper outlives a kill of its first process's session")

	require.NoError(t, KillAll(uid))
	deadline := time.After(10 * time.Second)
	for ended := false; !ended; {
		select {
		case _, ok := <-dots:
			ended = !ok
		case <-deadline:
			t.Fatal("KillAll left a process of the uid: its stdout is still open")
		}
	}
	require.NoError(t, unix.Kill(bystander.Process.Pid, 0), "a process of another uid was killed")
}

// TestKillAllLeavesNoThreadWithTheUID: after many KillAll calls, no thread
// of this process has the sandbox uid in any of its ids (a thread that
// could not go, the main thread, shows for the whole process in /proc).
func TestKillAllLeavesNoThreadWithTheUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("KillAll takes a sandbox uid: a root worker's (make test runs this as root)")
	}
	const uid = 1_900_104_002
	for range 50 {
		require.NoError(t, KillAll(uid))
	}
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // exited meanwhile
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if ids, ok := strings.CutPrefix(line, "Uid:"); ok {
				require.Equal(t, []string{"0", "0", "0", "0"}, strings.Fields(ids), "thread %s", task.Name())
			}
		}
	}
}
