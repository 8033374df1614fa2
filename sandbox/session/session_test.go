package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
)

func TestFilesPersistAcrossExecs(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		ctx := context.Background()
		res, _, errOut := run(t, s, sh("mkdir -p sub && echo hello > sub/a.txt"))
		require.Equal(t, 0, res.ExitCode, errOut)
		res, out, _ := run(t, s, ExecRequest{Argv: []string{"cat", "a.txt"}, Cwd: "sub"})
		require.Equal(t, 0, res.ExitCode)
		require.Equal(t, "hello\n", out)

		// The host side sees what a command wrote, and a command what the
		// host wrote (as the sandbox's uid: the command can rewrite it).
		got, err := s.Read(ctx, "sub/a.txt", 0, -1)
		require.NoError(t, err)
		require.Equal(t, "hello\n", string(got))
		_, err = s.Write(ctx, "from-host.txt", []byte("host data"), files.WriteOptions{})
		require.NoError(t, err)
		res, out, errOut = run(t, s, sh("cat from-host.txt && echo more >> from-host.txt"))
		require.Equal(t, 0, res.ExitCode, errOut)
		require.Equal(t, "host data", out)
		list, err := s.List(ctx, "")
		require.NoError(t, err)
		var names []string
		for _, e := range list {
			names = append(names, e.Name)
		}
		require.Subset(t, names, []string{"from-host.txt", "sub"})
	})
}

// What a command plants in the home cannot redirect the host's file
// operations while the sandbox runs.
func TestFileRefusalsOnALiveSession(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		ctx := context.Background()
		res, _, errOut := run(t, s, sh("ln -s /etc/passwd link && mkdir d && ln -s /etc d/etc && mkfifo fifo && echo x > f && ln f hard"))
		require.Equal(t, 0, res.ExitCode, errOut)
		_, err := s.Read(ctx, "link", 0, -1)
		require.ErrorIs(t, err, files.ErrSymlink)
		_, err = s.Write(ctx, "d/etc/passwd", []byte("x"), files.WriteOptions{})
		require.ErrorIs(t, err, files.ErrSymlink)
		_, err = s.Read(ctx, "fifo", 0, -1)
		require.ErrorIs(t, err, files.ErrNotRegular)
		_, err = s.Read(ctx, "hard", 0, -1)
		require.ErrorIs(t, err, files.ErrHardLink)
		require.NoError(t, s.Delete(ctx, "link", false))
		_, err = os.Stat("/etc/passwd")
		require.NoError(t, err, "deleting the link must leave its target")
	})
}

func TestBackgroundProcessSurvivesExecsAndKillEndsIt(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		ctx := context.Background()
		bg, err := s.Exec(ctx, ExecRequest{Argv: []string{"sleep", "1000"}, Background: true}, nil, nil)
		require.NoError(t, err)
		require.Positive(t, bg.PID)
		for range 3 {
			res, _, _ := run(t, s, sh("kill -0 "+strconv.Itoa(bg.PID)))
			require.Equal(t, 0, res.ExitCode, "the background sleep must live across execs")
		}
		ps, err := s.Ps(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, bg.PID, ps[0].PID)
		require.Equal(t, []string{"sleep", "1000"}, ps[0].Argv)
		require.True(t, ps[0].Background)
		require.WithinDuration(t, time.Now(), ps[0].Started, time.Minute)

		require.NoError(t, s.Kill(ctx, bg.PID, syscall.SIGTERM))
		eventually(t, "ps reports the killed sleep ended by SIGTERM", func() bool {
			ps, err := s.Ps(ctx)
			require.NoError(t, err)
			return len(ps) == 1 && !ps[0].Ended.IsZero() && ps[0].Signal == syscall.SIGTERM && ps[0].ExitCode == -1
		})
		bg2, err := s.Exec(ctx, ExecRequest{Argv: []string{"sh", "-c", "exit 3"}, Background: true}, nil, nil)
		require.NoError(t, err)
		eventually(t, "ps reports a background command's exit status", func() bool {
			ps, err := s.Ps(ctx)
			require.NoError(t, err)
			return len(ps) == 2 && ps[1].PID == bg2.PID && !ps[1].Ended.IsZero() && ps[1].ExitCode == 3 && ps[1].Signal == 0
		})
		require.ErrorIs(t, s.Kill(ctx, bg.PID, syscall.SIGKILL), ErrNoProcess)
		// Only the agent's descendants: not the agent itself, not pid 1 of
		// the view, not an unknown pid.
		require.ErrorIs(t, s.Kill(ctx, int(s.hello.PID), syscall.SIGKILL), ErrNoProcess)
		require.ErrorIs(t, s.Kill(ctx, 1, syscall.SIGKILL), ErrNoProcess)
		require.ErrorIs(t, s.Kill(ctx, 1<<21, syscall.SIGKILL), ErrNoProcess)
		require.ErrorIs(t, s.Kill(ctx, bg.PID, 0), ErrInvalidRequest)
		res, _, _ := run(t, s, ExecRequest{Argv: []string{"true"}})
		require.Equal(t, 0, res.ExitCode, "the session lives on")
	})
}

// A descendant that is not a command the session started (the child of
// one) is reachable by Kill on its own.
func TestKillReachesAGrandchild(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		ctx := context.Background()
		res, out, errOut := run(t, s, sh("sleep 1000 >/dev/null 2>&1 & echo $!"))
		require.Equal(t, 0, res.ExitCode, errOut)
		pid, err := strconv.Atoi(strings.TrimSpace(out))
		require.NoError(t, err)
		require.NoError(t, s.Kill(ctx, pid, syscall.SIGKILL))
		eventually(t, "the grandchild ends", func() bool {
			return s.Kill(ctx, pid, syscall.Signal(0x12)) != nil // SIGCONT: refused once gone
		})
	})
}

func TestHundredExecsInOneSession(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		for i := range 100 {
			res, out, _ := run(t, s, ExecRequest{Argv: []string{"echo", strconv.Itoa(i)}})
			require.Equal(t, 0, res.ExitCode)
			require.Equal(t, strconv.Itoa(i)+"\n", out)
		}
		require.Equal(t, 0, s.Running())
		require.NoError(t, s.Err())
	})
}

func TestConcurrentExecs(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		const workers, each = 8, 5
		var wg sync.WaitGroup
		errs := make(chan error, workers*each)
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					want := fmt.Sprintf("w%d-%d", w, i)
					var out, errb syncbuf.Buffer
					res, err := s.Exec(context.Background(), ExecRequest{
						Argv: []string{"/bin/sh", "-c", `echo "$X"; sleep 0.05; echo "e$X" >&2; exit $((${#X} % 7))`},
						Env:  map[string]string{"X": want},
					}, &out, &errb)
					switch {
					case err != nil:
						errs <- err
					case out.String() != want+"\n" || errb.String() != "e"+want+"\n" || res.ExitCode != len(want)%7:
						errs <- fmt.Errorf("%s: got out %q err %q exit %d", want, out.String(), errb.String(), res.ExitCode)
					}
				}
			})
		}
		// Running counts foreground execs in flight.
		eventually(t, "several execs in flight", func() bool { return s.Running() > 1 })
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, 0, s.Running())
	})
}

func TestOutputIsSeparatedAndBinarySafe(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		data := make([]byte, 300<<10)
		_, _ = rand.Read(data)
		req := sh("cat > in.bin; cat in.bin; printf E >&2; cat in.bin >&2")
		req.Stdin = data
		res, out, errOut := run(t, s, req)
		require.Equal(t, 0, res.ExitCode)
		require.True(t, bytes.Equal(data, []byte(out)), "stdout differs from the input")
		require.True(t, bytes.Equal(append([]byte("E"), data...), []byte(errOut)), "stderr differs")
		got, err := s.Read(context.Background(), "in.bin", 0, -1)
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, got))
	})
}

func TestExitCodesAndSignals(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		for name, c := range map[string]struct {
			req    ExecRequest
			code   int
			signal string
			stderr string
		}{
			"exit 0":         {req: ExecRequest{Argv: []string{"true"}}},
			"exit 3":         {req: sh("exit 3"), code: 3},
			"killed":         {req: sh("kill -9 $$"), code: -1, signal: "SIGKILL"},
			"terminated":     {req: sh("kill -TERM $$"), code: -1, signal: "SIGTERM"},
			"not found":      {req: ExecRequest{Argv: []string{"no-such-command-xyz"}}, code: 127, stderr: "warren: no-such-command-xyz: command not found\n"},
			"not executable": {req: ExecRequest{Argv: []string{"/etc/passwd"}}, code: 126, stderr: "cannot execute"},
			"bad cwd":        {req: ExecRequest{Argv: []string{"true"}, Cwd: "missing"}, code: 126, stderr: "not a directory"},
			"env":            {req: ExecRequest{Argv: []string{"/bin/sh", "-c", `test "$A" = b`}, Env: map[string]string{"A": "b"}}},
		} {
			t.Run(name, func(t *testing.T) {
				res, _, errOut := run(t, s, c.req)
				require.Equal(t, c.code, res.ExitCode, errOut)
				require.Equal(t, c.signal, res.Signal)
				require.Contains(t, errOut, c.stderr)
				require.False(t, res.TimedOut)
			})
		}
		_, err := s.Exec(context.Background(), ExecRequest{}, nil, nil)
		require.ErrorIs(t, err, ErrInvalidRequest)
		_, err = s.Exec(context.Background(), ExecRequest{Argv: []string{"true"}, Env: map[string]string{"A=B": "c"}}, nil, nil)
		require.ErrorIs(t, err, ErrInvalidRequest)
	})
}

func TestExecTimeoutKillsOnlyThatExec(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		ctx := context.Background()
		bg, err := s.Exec(ctx, ExecRequest{Argv: []string{"sleep", "1000"}, Background: true}, nil, nil)
		require.NoError(t, err)
		res, out, _ := run(t, s, ExecRequest{Argv: []string{"/bin/sh", "-c", "sleep 1000 & echo $!; sleep 1000"}, Timeout: 300 * time.Millisecond})
		require.True(t, res.TimedOut)
		require.Equal(t, "SIGKILL", res.Signal)
		require.Less(t, res.Wall, 30*time.Second)
		child := strings.TrimSpace(out)
		require.NotEmpty(t, child)
		eventually(t, "the timed-out command's child is killed with its group", func() bool {
			res, _, _ := run(t, s, sh("kill -0 "+child+" 2>/dev/null"))
			return res.ExitCode != 0
		})
		ps, err := s.Ps(ctx)
		require.NoError(t, err)
		ps = running(ps)
		require.Len(t, ps, 1, "only the background sleep is left: the timeout killed the whole group of its exec")
		require.Equal(t, bg.PID, ps[0].PID)
		res, _, _ = run(t, s, ExecRequest{Argv: []string{"true"}})
		require.Equal(t, 0, res.ExitCode)
	})
}

// A cancelled Exec returns at once and kills its command; the session
// lives on.
func TestExecCancelKillsTheCommand(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{})
		ctx, cancel := context.WithCancel(context.Background())
		var out syncbuf.Buffer
		done := make(chan error, 1)
		go func() {
			_, err := s.Exec(ctx, sh("echo started; exec sleep 1000"), &out, nil)
			done <- err
		}()
		eventually(t, "the command runs", func() bool { return out.String() == "started\n" })
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		eventually(t, "the cancelled command ends", func() bool {
			ps, err := s.Ps(context.Background())
			require.NoError(t, err)
			return len(running(ps)) == 0
		})
		require.Equal(t, 0, s.Running())
	})
}

// The agent and its commands are inside the sandbox: what works on the
// host (a file outside the view, a TCP connection) fails in an exec.
func TestCommandsRunInsideTheSandbox(t *testing.T) {
	dir, err := os.MkdirTemp("", "warren-session-probe-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o644))
	b, err := os.ReadFile(secret)
	require.NoError(t, err, "the probe must work on the host")
	require.Equal(t, "host secret", string(b))
	ln := listen(t)
	port := ln.port()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) { probeInside(t, newRunner(t, mode), mode, secret, port) })
	}
	require.Zero(t, ln.accepted(), "no connection from a sandbox reached the host listener")
}

func probeInside(t *testing.T, r *sandbox.Runner, mode sandbox.Isolation, secret string, port int) {
	s := start(t, r, Spec{})
	res, out, _ := run(t, s, ExecRequest{Argv: []string{"cat", secret}})
	require.NotEqual(t, 0, res.ExitCode, "read a host file outside the view: %q", out)
	require.NotContains(t, out, "host secret")
	connect := fmt.Sprintf("import socket; socket.create_connection(('127.0.0.1', %d), 2); print('connected')", port)
	res, out, errOut := run(t, s, ExecRequest{Argv: []string{"python3", "-c", connect}})
	require.NotEqual(t, 0, res.ExitCode, "connected to the host: %q %q", out, errOut)
	res, out, _ = run(t, s, ExecRequest{Argv: []string{"id", "-u"}})
	require.Equal(t, 0, res.ExitCode)
	require.NotEqual(t, "0\n", out, "commands never run as root")
	require.NoError(t, s.Close(context.Background()))
	require.Contains(t, s.Result().InForce, string(mode))
}

// The agent is not dumpable: a command (same uid) cannot open its stdout
// through /proc to forge frames, nor read its environment.
func TestCommandsCannotReachTheAgentsPipes(t *testing.T) {
	forModes(t, func(t *testing.T, r *sandbox.Runner) {
		s := start(t, r, Spec{Sandbox: sandbox.Spec{Env: map[string]string{"SESSION_SECRET": "s3cret"}}})
		for _, script := range []string{
			"printf 'garbage' > /proc/$PPID/fd/1",
			"cat /proc/$PPID/environ",
		} {
			res, out, errOut := run(t, s, sh(script))
			require.NotEqual(t, 0, res.ExitCode, "%s: %q %q", script, out, errOut)
			require.NotContains(t, out, "s3cret")
		}
		res, out, _ := run(t, s, sh(`echo "$SESSION_SECRET"`))
		require.Equal(t, 0, res.ExitCode)
		require.Equal(t, "s3cret\n", out, "the session's env reaches its commands")
		require.NoError(t, s.Err())
	})
}

// TestBackgroundCountsUntilItEnds: a live background command counts in
// Background (idle eviction counts it as running), one that could not
// start never does, and its end is activity.
func TestBackgroundCountsUntilItEnds(t *testing.T) {
	r := newRunner(t, modes[0])
	s := start(t, r, Spec{})
	ctx := context.Background()
	_, err := s.Exec(ctx, ExecRequest{Argv: []string{"/nonexistent"}, Background: true}, nil, nil)
	require.NoError(t, err)
	require.Zero(t, s.Background(), "a command that could not start does not run")
	run(t, s, sh("touch go"))
	bg, err := s.Exec(ctx, ExecRequest{Argv: []string{"sh", "-c", "while [ -e go ]; do sleep 0.01; done"}, Background: true}, nil, nil)
	require.NoError(t, err)
	require.Positive(t, bg.PID)
	require.Equal(t, 1, s.Background())
	require.Zero(t, s.Running(), "Running counts foreground execs only")
	require.NoError(t, s.Delete(ctx, "go", false))
	eventually(t, "the ended background command stops counting", func() bool { return s.Background() == 0 })

	// Its end is activity: a command that ends by itself, with no call on
	// the session between the mark and its end (every call is activity).
	_, err = s.Exec(ctx, ExecRequest{Argv: []string{"sleep", "2"}, Background: true}, nil, nil)
	require.NoError(t, err)
	before := time.Now()
	require.Equal(t, 1, s.Background(), "the command must still run after the mark, or the check below proves nothing")
	eventually(t, "the ended background command stops counting", func() bool { return s.Background() == 0 })
	require.False(t, s.LastActivity().Before(before), "its end is activity")

	_, err = s.Exec(ctx, ExecRequest{Argv: []string{"sleep", "1000"}, Background: true}, nil, nil)
	require.NoError(t, err)
	ps, err := s.Ps(ctx)
	require.NoError(t, err)
	ps = running(ps)
	require.Len(t, ps, 1)
	require.Equal(t, 1, s.Background())
	require.NoError(t, s.Kill(ctx, ps[0].PID, syscall.SIGKILL))
	eventually(t, "a killed background command stops counting", func() bool { return s.Background() == 0 })
}

// running keeps the processes of ps that still run (ps also lists the
// background commands that ended).
func running(ps []Process) []Process {
	var out []Process
	for _, p := range ps {
		if p.Ended.IsZero() {
			out = append(out, p)
		}
	}
	return out
}
