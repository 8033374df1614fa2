package session

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
)

// hostProcsWith lists the host pids whose command line contains marker.
func hostProcsWith(t *testing.T, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// agentPID is the host pid of the session's agent: its own pid outside a
// pid namespace (Landlock mode), else the process running the agent
// binary whose working directory is the session's home (readable by the
// worker's user: it owns the sandbox's user namespace).
func agentPID(t *testing.T, s *Session) int {
	t.Helper()
	if s.hello.PID != 1 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(int(s.hello.PID)) + "/cmdline")
		require.NoError(t, err)
		require.Equal(t, testAgentPath+"\x00", string(b))
		return int(s.hello.PID)
	}
	for _, pid := range hostProcsWith(t, testAgentPath) {
		if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err == nil && cwd == s.Home() {
			return pid
		}
	}
	t.Fatalf("no agent process with cwd %s", s.Home())
	return 0
}

func TestCloseLeavesNothingBehind(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		ctx := context.Background()
		s, err := Start(ctx, r, Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Wall: time.Minute}}})
		require.NoError(t, err)
		marker := "7" + strconv.Itoa(int(time.Now().UnixNano()%1e8))
		_, err = s.Exec(ctx, ExecRequest{Argv: []string{"sleep", marker}, Background: true}, nil, nil)
		require.NoError(t, err)
		// A daemon that left the agent's process group and session.
		res, _, errOut := run(t, s, ExecRequest{Argv: []string{"python3", "-c", "import os, time\nif os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '" + marker + "1'])"}})
		require.Equal(t, 0, res.ExitCode, errOut)
		eventually(t, "the sleeps run", func() bool { return len(hostProcsWith(t, marker)) == 2 })
		home := s.Home()

		require.NoError(t, s.Close(ctx))
		require.NoError(t, s.Close(ctx), "Close is idempotent")
		<-s.Done()
		require.ErrorIs(t, s.Err(), ErrSessionGone)
		var g *GoneError
		require.ErrorAs(t, s.Err(), &g)
		require.Equal(t, GoneClosed, g.Reason)
		require.Empty(t, hostProcsWith(t, marker), "a process of the session outlived Close")
		_, err = os.Stat(home)
		require.ErrorIs(t, err, os.ErrNotExist, "the run's own home is removed")
		mounts, err := os.ReadFile("/proc/self/mountinfo")
		require.NoError(t, err)
		require.NotContains(t, string(mounts), home)
		_, err = s.Exec(ctx, ExecRequest{Argv: []string{"true"}}, nil, nil)
		require.ErrorIs(t, err, ErrSessionGone)
		_, err = s.Ps(ctx)
		require.ErrorIs(t, err, ErrSessionGone)
	})
}

// A caller's home keeps its contents after Close, handed back to its owner.
func TestCallerHomeKeepsItsContents(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		parent, err := os.MkdirTemp("", "warren-session-home-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(parent) })
		require.NoError(t, os.Chmod(parent, 0o755))
		home := filepath.Join(parent, "home")
		s := start(t, r, Spec{Home: home})
		res, _, errOut := run(t, s, sh("echo kept > kept.txt"))
		require.Equal(t, 0, res.ExitCode, errOut)
		require.NoError(t, s.Close(context.Background()))
		b, err := os.ReadFile(filepath.Join(home, "kept.txt"))
		require.NoError(t, err)
		require.Equal(t, "kept\n", string(b))
		fi, err := os.Stat(filepath.Join(home, "kept.txt"))
		require.NoError(t, err)
		require.Equal(t, uint32(os.Geteuid()), fi.Sys().(*syscall.Stat_t).Uid, "the home is handed back to its owner")
	})
}

// The sandbox dying on its own (its agent killed from the host) fires Done
// and fails the execs in flight and after with ErrSessionGone.
func TestAgentDeathEndsTheSession(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		ctx := context.Background()
		inflight := make(chan error, 1)
		var out syncbuf.Buffer
		go func() {
			_, err := s.Exec(ctx, sh("echo started; exec sleep 1000"), &out, nil)
			inflight <- err
		}()
		eventually(t, "the command runs", func() bool { return out.String() == "started\n" })
		require.NoError(t, syscall.Kill(agentPID(t, s), syscall.SIGKILL))
		select {
		case <-s.Done():
		case <-time.After(time.Minute):
			t.Fatal("Done did not fire after the agent died")
		}
		require.ErrorIs(t, <-inflight, ErrSessionGone)
		var g *GoneError
		require.ErrorAs(t, s.Err(), &g)
		require.Equal(t, GoneAgentExited, g.Reason, g.Error())
		require.Equal(t, "SIGKILL", g.Signal)
		_, err := s.Exec(ctx, ExecRequest{Argv: []string{"true"}}, nil, nil)
		require.ErrorIs(t, err, ErrSessionGone)
		require.ErrorIs(t, s.Kill(ctx, 5, syscall.SIGKILL), ErrSessionGone)
	})
}

// A command killing its own agent (the Landlock mode, where the agent is
// not pid 1 of a pid namespace) ends the session the same way.
func TestCommandKillingTheAgentEndsTheSession(t *testing.T) {
	s := start(t, newRunner(t, sandbox.IsolationLandlock), Spec{})
	_, err := s.Exec(context.Background(), sh("kill -9 $PPID; sleep 1000"), nil, nil)
	require.ErrorIs(t, err, ErrSessionGone)
	<-s.Done()
	var g *GoneError
	require.ErrorAs(t, s.Err(), &g)
	require.Equal(t, GoneAgentExited, g.Reason)
}

func TestTTLEndsTheSession(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Wall: time.Second}}})
		_, err := s.Exec(context.Background(), ExecRequest{Argv: []string{"sleep", "1000"}}, nil, nil)
		require.ErrorIs(t, err, ErrSessionGone)
		<-s.Done()
		var g *GoneError
		require.ErrorAs(t, s.Err(), &g)
		require.Equal(t, GoneTTL, g.Reason)
	})
}

// A missing or unusable agent fails Start with ErrAgent, leaving nothing.
// As root, so is one under a directory sandbox uids cannot search.
func TestStartRefusesABadAgent(t *testing.T) {
	r := newRunner(t, sandbox.IsolationLandlock)
	for name, path := range map[string]string{
		"missing":      "/nonexistent/warren-sandbox-agent",
		"relative":     "warren-sandbox-agent",
		"not an agent": "/bin/true",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Start(context.Background(), r, Spec{AgentPath: path})
			require.ErrorIs(t, err, ErrAgent)
		})
	}
	if os.Geteuid() == 0 {
		private := t.TempDir() // 0700
		p := filepath.Join(private, AgentBinaryName)
		b, err := os.ReadFile(testAgentPath)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o755))
		_, err = Start(context.Background(), r, Spec{AgentPath: p})
		require.ErrorIs(t, err, ErrAgent)
		require.ErrorContains(t, err, "cannot pass")
	}
}

// Once the session has ended, its file methods refuse: the sandbox's uid
// is released, nothing may be created in its name.
func TestFileMethodsRefuseAfterTheEnd(t *testing.T) {
	r := newRunner(t, sandbox.IsolationLandlock)
	s := start(t, r, Spec{})
	_, err := s.Write(context.Background(), "a", []byte("x"), files.WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Close(context.Background()))
	_, err = s.Write(context.Background(), "b", []byte("x"), files.WriteOptions{})
	require.ErrorIs(t, err, ErrSessionGone)
	_, err = s.Read(context.Background(), "a", 0, -1)
	require.ErrorIs(t, err, ErrSessionGone)
	_, err = s.List(context.Background(), "")
	require.ErrorIs(t, err, ErrSessionGone)
}
