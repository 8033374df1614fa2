package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
)

// The whole session lifecycle through the CLI, against `warren worker`
// processes with the default isolation: each session is a real sandbox.
func TestE2ESandboxSessionLifecycle(t *testing.T) {
	e := newE2E(t)
	e.startSandboxedWorker(t, 2, "--drain-timeout", "5s")

	out, stderr, code := e.run(t, "sandbox", "create", "--json", "--env", "GREETING=hi", "--idle", "5m")
	require.Zero(t, code, stderr)
	var created struct{ ID, Token, Host string }
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)
	require.NotEmpty(t, created.Token)
	id := created.ID
	require.True(t, strings.HasPrefix(id, created.Host+"."), id)
	// The token is kept, readable by its owner only.
	st, err := os.Stat(filepath.Join(e.dataDir, "sandboxes", id+".json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// exec streams and exits with the command's status; create's env holds.
	out, stderr, code = e.run(t, "sandbox", "exec", id, "--", "sh", "-c", `echo "$GREETING"; echo err >&2; echo kept > state; exit 7`)
	require.Equal(t, 7, code, stderr)
	require.Equal(t, "hi\n", out)
	require.Contains(t, stderr, "err\n")
	out, _, code = e.run(t, "sandbox", "exec", id, "--", "cat", "state")
	require.Zero(t, code)
	require.Equal(t, "kept\n", out)
	// The home's listing hides dot names as ls does: .tmp and .shm hold
	// the sandbox's /tmp and /dev/shm (under its disk limit); -a shows them.
	out, _, code = e.run(t, "sandbox", "ls", id)
	require.Zero(t, code)
	require.Contains(t, out, "state")
	require.NotContains(t, out, ".tmp")
	out, _, code = e.run(t, "sandbox", "ls", "-a", id)
	require.Zero(t, code)
	require.Contains(t, out, ".tmp")
	c := e.cmd(t.Context(), "sandbox", "exec", "--stdin", id, "--", "wc", "-c")
	c.Stdin = strings.NewReader("12345")
	out, _, code = runCmd(t, c)
	require.Zero(t, code)
	require.Equal(t, "5", strings.TrimSpace(out))

	// cp both ways, binary-safe.
	dir := t.TempDir()
	blob := make([]byte, 3<<20+17)
	_, _ = rand.Read(blob)
	local := filepath.Join(dir, "blob")
	require.NoError(t, os.WriteFile(local, blob, 0o600))
	_, stderr, code = e.run(t, "sandbox", "cp", "--parents", local, id+":in/blob")
	require.Zero(t, code, stderr)
	back := filepath.Join(dir, "back")
	_, stderr, code = e.run(t, "sandbox", "cp", id+":in/blob", back)
	require.Zero(t, code, stderr)
	got, err := os.ReadFile(back)
	require.NoError(t, err)
	require.Equal(t, blob, got)

	out, _, code = e.run(t, "sandbox", "ls", id+":in")
	require.Zero(t, code)
	require.Contains(t, out, "blob")
	out, _, code = e.run(t, "sandbox", "stat", id+":in/blob")
	require.Zero(t, code)
	require.Contains(t, out, `"size":3145745`)
	_, _, code = e.run(t, "sandbox", "mkdir", id+":a/b")
	require.Zero(t, code)
	_, _, code = e.run(t, "sandbox", "rm", "-r", id+":a")
	require.Zero(t, code)
	_, stderr, code = e.run(t, "sandbox", "stat", id+":a")
	require.NotZero(t, code)
	require.Contains(t, stderr, "not_found")

	// Background processes: ps lists, kill ends.
	out, stderr, code = e.run(t, "sandbox", "exec", "--background", id, "--", "sleep", "60")
	require.Zero(t, code, stderr)
	pid := strings.TrimSpace(out)
	out, _, code = e.run(t, "sandbox", "ps", id)
	require.Zero(t, code)
	require.Contains(t, out, pid)
	require.Contains(t, out, "sleep 60")
	_, stderr, code = e.run(t, "sandbox", "kill", "--signal", "SIGKILL", id, pid)
	require.Zero(t, code, stderr)
	require.Eventually(t, func() bool {
		out, _, _ := e.run(t, "sandbox", "ps", id)
		return strings.Contains(out, "killed:SIGKILL") && !strings.Contains(out, "running")
	}, 30*time.Second, 50*time.Millisecond, "ps reports how the background command ended")

	out, _, code = e.run(t, "sandbox", "ls")
	require.Zero(t, code)
	require.Contains(t, out, id)
	out, _, code = e.run(t, "sandbox", "status", id)
	require.Zero(t, code)
	require.Contains(t, out, `"state":"running"`)

	// --token overrides the kept one: another sandbox's token is refused.
	out2, _, code := e.run(t, "sandbox", "create")
	require.Zero(t, code)
	other := strings.TrimSpace(out2)
	_, stderr, code = e.run(t, "sandbox", "status", "--token", created.Token, other)
	require.NotZero(t, code)
	require.Contains(t, stderr, "token_invalid")
	// Two slots, two sandboxes: a third create says no capacity at once;
	// with --wait it gets the slot a delete frees.
	_, stderr, code = e.run(t, "sandbox", "create")
	require.NotZero(t, code)
	require.Contains(t, stderr, "no_capacity")
	waiting := e.cmd(t.Context(), "sandbox", "create", "--wait", "--wait-for", "1m")
	var wout, werr bytes.Buffer
	waiting.Stdout, waiting.Stderr = &wout, &werr
	require.NoError(t, waiting.Start())
	_, stderr, code = e.run(t, "sandbox", "rm", other)
	require.Zero(t, code, stderr)
	require.NoError(t, waiting.Wait(), werr.String())
	other = strings.TrimSpace(wout.String())

	for _, s := range []string{id, other} {
		_, stderr, code = e.run(t, "sandbox", "rm", s)
		require.Zero(t, code, stderr)
	}
	_, stderr, code = e.run(t, "sandbox", "status", "--token", created.Token, id)
	require.NotZero(t, code)
	require.Contains(t, stderr, "sandbox_gone")
	// Without --token, the CLI's own record says it was removed here.
	_, stderr, code = e.run(t, "sandbox", "exec", id, "--", "true")
	require.NotZero(t, code)
	require.Contains(t, stderr, "sandbox_gone")
	require.Contains(t, stderr, "was removed")
}

// A worker killed with SIGKILL takes its sandboxes with it: the client
// says sandbox gone, and the sandbox's processes are gone from the host.
func TestE2ESandboxWorkerKilled(t *testing.T) {
	e := newE2E(t)
	host := fmt.Sprintf("e2e-kill-%d", time.Now().UnixNano())
	c, _ := e.startRegisteredWorker(t, host, "--capacity", "1", "--isolation", "auto",
		"--scratch-root", sandboxScratch(t), "--session-root", t.TempDir())

	out, stderr, code := e.run(t, "sandbox", "create")
	require.Zero(t, code, stderr)
	id := strings.TrimSpace(out)
	marker := fmt.Sprintf("%d", time.Now().UnixNano()%100000+100000)
	out, stderr, code = e.run(t, "sandbox", "exec", "--background", id, "--", "sleep", marker)
	require.Zero(t, code, stderr)
	_, err := strconv.Atoi(strings.TrimSpace(out)) // its pid in the sandbox's pid namespace
	require.NoError(t, err)
	require.NotEmpty(t, hostPidsOf(t, "sleep", marker), "the background command runs on the host")

	require.NoError(t, c.Process.Kill())
	_ = c.Wait()
	_, stderr, code = e.run(t, "sandbox", "status", id)
	require.NotZero(t, code)
	require.Contains(t, stderr, "sandbox_gone")
	require.Eventually(t, func() bool { return len(hostPidsOf(t, "sleep", marker)) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the sandbox's process outlived its worker")
}

// Under auth a tenant's CLI reaches its own sandboxes with its own creds,
// and another tenant sees none of them and cannot use one with its token.
func TestE2EAuthSandboxSessions(t *testing.T) {
	a := startAuthE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	workerErr := background(t, a.as(context.Background(), broker.WorkerCreds, "worker", "--capacity", "2", "--isolation", "auto",
		"--scratch-root", sandboxScratch(t), "--session-root", t.TempDir(), "--host-id", "auth-sbx", "--drain-timeout", "5s"))
	a.waitForWorker(t, workerErr)

	out, stderr, code := runCmd(t, a.as(ctx, "alice.creds", "sandbox", "create", "--json"))
	require.Zero(t, code, "create as alice: %s\nworker: %s", stderr, workerErr)
	var created struct{ ID, Token string }
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)
	out, stderr, code = runCmd(t, a.as(ctx, "alice.creds", "sandbox", "exec", created.ID, "--", "sh", "-c", "echo mine; exit 4"))
	require.Equal(t, 4, code, stderr)
	require.Equal(t, "mine\n", out, "exec output crosses to the tenant's inbox")
	out, _, code = runCmd(t, a.as(ctx, "alice.creds", "sandbox", "ls"))
	require.Zero(t, code)
	require.Contains(t, out, created.ID)

	asBob := func(args ...string) *exec.Cmd {
		c := a.as(ctx, "bob.creds", args...)
		c.Env = append(c.Env, "WARREN_DATA_DIR="+t.TempDir()) // bob's own token files
		return c
	}
	out, stderr, code = runCmd(t, asBob("sandbox", "ls"))
	require.Zero(t, code, stderr)
	require.NotContains(t, out, created.ID)
	_, stderr, code = runCmd(t, asBob("sandbox", "status", "--token", created.Token, created.ID))
	require.NotZero(t, code)
	require.Contains(t, stderr, "token_invalid")

	_, stderr, code = runCmd(t, a.as(ctx, "alice.creds", "sandbox", "rm", created.ID))
	require.Zero(t, code, stderr)
}

// hostPidsOf lists the host's processes whose argv is exactly argv.
func hostPidsOf(t *testing.T, argv ...string) []int {
	t.Helper()
	want := strings.Join(argv, "\x00") + "\x00"
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && string(b) == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A session of a worker with the default isolation is a sandbox over the
// wire: through the CLI, reading a host file outside its view and
// connecting to a host TCP port both fail, while the same on the host
// succeeds, and its commands run as a uid other than the worker's.
func TestE2ESandboxSessionIsolated(t *testing.T) {
	dir, err := os.MkdirTemp("", "warren-e2e-probe-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755)) // readable by any uid without a sandbox
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o644))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	connect := fmt.Sprintf("import socket; socket.create_connection(('127.0.0.1', %d), 2); print('connected')", ln.Addr().(*net.TCPAddr).Port)

	// The controls: both work on the host.
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	require.Equal(t, "host secret", string(b))
	ctl, err := exec.Command("python3", "-c", connect).CombinedOutput()
	require.NoError(t, err, "%s", ctl)
	require.Equal(t, "connected\n", string(ctl))
	require.EqualValues(t, 1, accepted.Load())

	e := newE2E(t)
	e.startSandboxedWorker(t, 1, "--drain-timeout", "5s")
	out, stderr, code := e.run(t, "sandbox", "create")
	require.Zero(t, code, stderr)
	id := strings.TrimSpace(out)

	out, stderr, code = e.run(t, "sandbox", "exec", id, "--", "cat", secret)
	require.NotZero(t, code, "read a host file outside the view: %q", out)
	require.NotContains(t, out, "host secret")
	require.NotEmpty(t, stderr)
	out, stderr, code = e.run(t, "sandbox", "exec", id, "--", "python3", "-c", connect)
	require.NotZero(t, code, "connected to the host: %q %q", out, stderr)
	require.NotContains(t, out, "connected")
	require.EqualValues(t, 1, accepted.Load(), "no connection from the session reached the host listener")

	out, stderr, code = e.run(t, "sandbox", "exec", id, "--", "id", "-u")
	require.Zero(t, code, stderr)
	uid, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err, out)
	require.NotEqual(t, os.Getuid(), uid, "the session's commands run as the worker's uid")
	require.NotZero(t, uid, "the session's commands run as root")
	_, stderr, code = e.run(t, "sandbox", "rm", id)
	require.Zero(t, code, stderr)
}

// A worker whose session agent is missing says so at start, naming the
// file and the fix, and serves tasks but no sessions.
func TestE2EWorkerWithoutAgentSaysSo(t *testing.T) {
	e := newE2E(t)
	missing := filepath.Join(t.TempDir(), "warren-sandbox-agent")
	host := fmt.Sprintf("e2e-noagent-%d", time.Now().UnixNano())
	_, errb := e.startRegisteredWorker(t, host, "--capacity", "1", "--isolation", "none", "--insecure-no-isolation",
		"--scratch-root", t.TempDir(), "--session-agent", missing)
	require.Contains(t, errb.String(), missing)
	require.Contains(t, errb.String(), "make build")
	require.Contains(t, errb.String(), "sandbox sessions not served")

	_, stderr, code := e.run(t, "sandbox", "create")
	require.NotZero(t, code)
	require.Contains(t, stderr, "no_capacity")
	out, stderr, code := e.run(t, "exec", "--", "echo", "tasks run")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "tasks run")
}

// create's --disk and --memory reach the session's sandbox: a file over
// the disk limit and an allocation over the memory limit fail, what fits
// works, and the session lives on.
func TestE2ESandboxCreateLimits(t *testing.T) {
	e := newE2E(t)
	e.startSandboxedWorker(t, 1, "--drain-timeout", "5s")
	out, stderr, code := e.run(t, "sandbox", "create", "--disk", "1M", "--memory", "96M")
	require.Zero(t, code, stderr)
	id := strings.TrimSpace(out)
	_, stderr, code = e.run(t, "sandbox", "exec", id, "--", "sh", "-c", "head -c 512K /dev/zero > fits")
	require.Zero(t, code, stderr)
	_, stderr, code = e.run(t, "sandbox", "exec", id, "--", "sh", "-c", "head -c 2M /dev/zero > big")
	require.NotZero(t, code, "a 2 MiB file under --disk 1M: %s", stderr)
	out, stderr, code = e.run(t, "sandbox", "exec", id, "--", "python3", "-c", "b = bytearray(256 << 20); print('allocated')")
	require.NotZero(t, code, "256 MiB under --memory 96M: %q %s", out, stderr)
	require.NotContains(t, out, "allocated")
	out, stderr, code = e.run(t, "sandbox", "exec", id, "--", "python3", "-c", "b = bytearray(16 << 20); print('allocated')")
	require.Zero(t, code, stderr)
	require.Equal(t, "allocated\n", out)
	_, stderr, code = e.run(t, "sandbox", "rm", id)
	require.Zero(t, code, stderr)
}

// TestE2ESandboxCpPastTheDiskLimit: warren sandbox cp of 16 MiB into a
// sandbox created with --disk 4M fails, naming disk_full and the limit,
// and the sandbox's home holds no more than the limit; the control, a
// 1 MiB copy, succeeds, and ls lists it as the sandbox's own ls does.
func TestE2ESandboxCpPastTheDiskLimit(t *testing.T) {
	e := newE2E(t)
	e.startSandboxedWorker(t, 1, "--drain-timeout", "5s")
	out, stderr, code := e.run(t, "sandbox", "create", "--disk", "4M")
	require.Zero(t, code, stderr)
	id := strings.TrimSpace(out)
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small"), filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(small, make([]byte, 1<<20), 0o644))
	require.NoError(t, os.WriteFile(big, make([]byte, 16<<20), 0o644))

	_, stderr, code = e.run(t, "sandbox", "cp", small, id+":small")
	require.Zero(t, code, "control: within the limit: %s", stderr)
	out, stderr, code = e.run(t, "sandbox", "ls", id)
	require.Zero(t, code, stderr)
	require.Contains(t, out, "small")
	_, stderr, code = e.run(t, "sandbox", "cp", big, id+":big")
	require.NotZero(t, code)
	require.Contains(t, stderr, "disk_full")
	require.Contains(t, stderr, "(4194304 bytes)", "the error names the limit")
	require.Contains(t, stderr, "3145728 of 16777216 bytes copied", "and what of the copy stays")
	out, stderr, code = e.run(t, "sandbox", "exec", id, "--", "sh", "-c", "du -sk . | cut -f1")
	require.Zero(t, code, stderr)
	kib, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err)
	require.LessOrEqual(t, kib, 4<<10, "the home holds no more than its limit")
	_, stderr, code = e.run(t, "sandbox", "rm", id)
	require.Zero(t, code, stderr)
}

// startRegisteredWorker starts a `warren worker --host-id host args...`
// process, killed at the end of the test, and waits until host is in the
// registry; it returns the process and its stderr.
func (e *e2e) startRegisteredWorker(t *testing.T, host string, args ...string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	c := e.cmd(context.Background(), append([]string{"worker", "--host-id", host}, args...)...)
	errb := &syncbuf.Buffer{}
	c.Stderr = errb
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	require.Eventually(t, func() bool {
		out, _, code := e.run(t, "hosts", "--json")
		return code == 0 && strings.Contains(out, host)
	}, 30*time.Second, 50*time.Millisecond, "worker did not register: %s", errb.String())
	return c, errb
}

// TestE2EReadmeBackgroundServer runs README's session example: a
// background HTTP server in a sandbox with loopback networking, reached
// from a second exec in the same sandbox; ps reports how background
// commands end (an exit status, a signal).
func TestE2EReadmeBackgroundServer(t *testing.T) {
	e := newE2E(t)
	e.startSandboxedWorker(t, 1)
	out, stderr, code := e.run(t, "sandbox", "create", "--network", "loopback", "--idle", "5m")
	require.Zero(t, code, stderr)
	id := strings.TrimSpace(out)
	t.Cleanup(func() { e.run(t, "sandbox", "rm", id) })

	out, stderr, code = e.run(t, "sandbox", "exec", "--background", id, "--", "python3", "-m", "http.server", "8000")
	require.Zero(t, code, stderr)
	server := strings.TrimSpace(out)
	fetch := []string{"sandbox", "exec", id, "--", "python3", "-c",
		"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8000/', timeout=5).status)"}
	require.Eventually(t, func() bool {
		out, _, code := e.run(t, fetch...)
		return code == 0 && out == "200\n"
	}, 30*time.Second, 100*time.Millisecond, "the server answers a second exec in the same sandbox")
	out, _, code = e.run(t, "sandbox", "ps", id)
	require.Zero(t, code)
	require.Regexp(t, server+`\s.*\strue\s+running\s+python3 -m http.server 8000`, out)

	_, stderr, code = e.run(t, "sandbox", "kill", id, server)
	require.Zero(t, code, stderr)
	out, stderr, code = e.run(t, "sandbox", "exec", "--background", id, "--", "sh", "-c", "exit 3")
	require.Zero(t, code, stderr)
	quick := strings.TrimSpace(out)
	require.Eventually(t, func() bool {
		out, _, _ := e.run(t, "sandbox", "ps", id)
		return regexpFound(`(?m)^`+server+`\s.*killed:SIGTERM`, out) && regexpFound(`(?m)^`+quick+`\s.*exited:3`, out)
	}, 30*time.Second, 50*time.Millisecond, "ps reports how each background command ended")
}

func regexpFound(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
