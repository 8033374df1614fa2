package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// The client build must not link what makes warren-host slow to start:
// the embedded nats-server, Prometheus, the worker.
func TestClientBuildLinksNoHostPackages(t *testing.T) {
	hostOnly := []string{
		"github.com/nats-io/nats-server/v2/server",
		"github.com/prometheus/client_golang/prometheus",
		"github.com/warrenhq/warren/worker",
		"github.com/warrenhq/warren/broker/embedded",
	}
	deps := func(pkg string, tags ...string) map[string]bool {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		m := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			m[p] = true
		}
		return m
	}
	client, host := deps("github.com/warrenhq/warren/cmd/warren", "-tags", "client"), deps("github.com/warrenhq/warren/cmd/warren")
	for _, p := range hostOnly {
		require.True(t, host[p], "warren-host should link %s (else this test checks nothing)", p)
		require.False(t, client[p], "the client build links %s: `go list -deps -tags client ./cmd/warren` shows the path", p)
	}
	// Client code links no server through the broker package.
	for _, pkg := range []string{"github.com/warrenhq/warren/broker", "github.com/warrenhq/warren/scheduler"} {
		require.False(t, deps(pkg)[hostOnly[0]], "%s links %s", pkg, hostOnly[0])
	}
}

// warren (the client build) hands up, the embedded fallback and the like
// to warren-host beside it, and runs exec and sandbox run itself.
func TestClientBinaryExecsTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	warren, env := buildWarren(t)
	host := filepath.Join(filepath.Dir(warren), "warren-host")
	// run is bin's stdout, and its exit status; stderr is logged (the
	// in-process worker warns that go test's temp dir is private to root)
	// and, on a failure, returned instead.
	var stdin string // for the next run only
	run := func(env []string, bin string, args ...string) (string, int) {
		cmd := withEnv(exec.Command(bin, args...), env)
		cmd.Stdin, stdin = strings.NewReader(stdin), ""
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("%s %v: stderr: %s", filepath.Base(bin), args, stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String() + stderr.String(), ee.ExitCode()
		}
		require.NoError(t, err, "%s %v: %s", bin, args, stderr.String())
		return stdout.String(), 0
	}

	t.Run("help is warren-host's", func(t *testing.T) {
		for _, args := range [][]string{{"up", "--help"}, {"worker", "--help"}, {"exec", "--help"}} {
			c, cc := run(env, warren, args...)
			h, hc := run(env, host, args...)
			require.Equal(t, 0, cc)
			require.Equal(t, hc, cc)
			require.Equal(t, h, c, "warren %v", args)
			require.Contains(t, c, "Usage: warren "+args[0])
		}
	})

	t.Run("sandbox run stays in the client", func(t *testing.T) {
		out, code := run(env, warren, "sandbox", "run", "--", "/bin/echo", "ok")
		require.Equal(t, 0, code, out)
		require.Equal(t, "ok\n", out)
	})

	t.Run("exec with no broker runs in warren-host's embedded broker", func(t *testing.T) {
		fresh := append(env, "WARREN_DATA_DIR="+t.TempDir())
		out, code := run(fresh, warren, "exec", "--", "echo", "hi")
		require.Equal(t, 0, code, out)
		require.Equal(t, "hi\n", out)
		out, code = run(fresh, warren, "exec", "--", "sh", "-c", "exit 3")
		require.Equal(t, 3, code, out)
		// warren-host is chosen before the command reads its stdin.
		stdin = "from stdin\n"
		out, code = run(fresh, warren, "exec", "--stdin", "--", "cat")
		require.Equal(t, 0, code, out)
		require.Equal(t, "from stdin\n", out)
	})

	// Any bytes reach the command as given: 100,000 random bytes on stdin
	// and in a --file (a JSON string field would turn each invalid UTF-8
	// byte into three).
	t.Run("exec carries binary stdin and files unchanged", func(t *testing.T) {
		fresh := append(env, "WARREN_DATA_DIR="+t.TempDir())
		bin := make([]byte, 100_000)
		_, err := rand.Read(bin)
		require.NoError(t, err)
		sum := fmt.Sprintf("%x", sha256.Sum256(bin))
		tool := filepath.Join(t.TempDir(), "tool.bin")
		require.NoError(t, os.WriteFile(tool, bin, 0o644))
		stdin = string(bin)
		out, code := run(fresh, warren, "exec", "--stdin", "--", "sh", "-c", "cat >in; wc -c <in; sha256sum <in")
		require.Equal(t, 0, code, out)
		require.Equal(t, "100000\n"+sum+"  -\n", out)
		out, code = run(fresh, warren, "exec", "--file", "bin/t="+tool, "--", "sha256sum", "bin/t")
		require.Equal(t, 0, code, out)
		require.Equal(t, sum+"  bin/t\n", out)
		// And back out: the command's binary stdout, streamed by exec and
		// stored in the result, is the file's bytes.
		out, code = run(fresh, warren, "exec", "--file", "t="+tool, "--", "cat", "t")
		require.Equal(t, 0, code)
		require.Equal(t, sum, fmt.Sprintf("%x", sha256.Sum256([]byte(out))), "exec's stdout is the bytes the command wrote")
		out, code = run(fresh, warren, "exec", "--file", "t="+tool, "--", "sh", "-c", "cat t >&2; exit 3")
		require.Equal(t, 3, code) // run returns stdout (empty) and stderr (with the in-process worker's log) then
		require.True(t, strings.Contains(out, string(bin)), "its stderr holds the bytes the command wrote")

		// An argument or env value that is not UTF-8 cannot travel as JSON
		// text: refused naming it, nothing run (the control runs the
		// same command with valid bytes).
		out, code = run(fresh, warren, "exec", "--", "sh", "-c", `printf %s "$1"`, "x", "a\xffb")
		require.NotEqual(t, 0, code, out)
		require.Contains(t, out, "argv[4] is not valid UTF-8")
		out, code = run(fresh, warren, "exec", "-e", "K=a\xffb", "--", "sh", "-c", `printf %s "$K"`)
		require.NotEqual(t, 0, code, out)
		require.Contains(t, out, "argument 3 is not valid UTF-8")
		out, code = run(fresh, warren, "exec", "--", "sh", "-c", `printf %s "$1"`, "x", "a\u00ffb")
		require.Equal(t, 0, code, out)
		require.Equal(t, "a\u00ffb", out)
	})

	// Inputs larger than a task message go through the inputs object
	// store and reach the command byte for byte: a 10 MiB stdin and a
	// 10 MiB --file, and the same file in a submitted JSONL task.
	t.Run("exec and submit carry 10 MiB inputs unchanged", func(t *testing.T) {
		fresh := append(env, "WARREN_DATA_DIR="+t.TempDir())
		big := make([]byte, 10<<20)
		_, err := rand.Read(big)
		require.NoError(t, err)
		sum := fmt.Sprintf("%x", sha256.Sum256(big))
		file := filepath.Join(t.TempDir(), "big.bin")
		require.NoError(t, os.WriteFile(file, big, 0o644))
		stdin = string(big)
		out, code := run(fresh, warren, "exec", "--stdin", "--", "sh", "-c", "cat >in; wc -c <in; sha256sum <in")
		require.Equal(t, 0, code, out)
		require.Equal(t, "10485760\n"+sum+"  -\n", out)
		out, code = run(fresh, warren, "exec", "--file", "data/big="+file, "--", "sha256sum", "data/big")
		require.Equal(t, 0, code, out)
		require.Equal(t, sum+"  data/big\n", out)

		line, err := json.Marshal(map[string]any{"id": "big", "kind": "exec", "argv": []string{"sha256sum", "big"},
			"files": map[string]messages.Bytes{"big": big}})
		require.NoError(t, err)
		jsonl := filepath.Join(t.TempDir(), "big.jsonl")
		require.NoError(t, os.WriteFile(jsonl, append(line, '\n'), 0o644))
		out, code = run(fresh, warren, "submit", "--batch", "bigfile", "--wait", jsonl)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, sum+"  big")
	})

	t.Run("up execs warren-host; exec reaches it", func(t *testing.T) {
		port := brokertest.FreePorts(t, 1)[0]
		up := startProcess(t, withEnv(exec.Command(warren, "up", "--capacity", "2", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--cluster-listen", "127.0.0.1:0"), env), "worker ready")
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", up.Process.Pid))
		require.NoError(t, err)
		require.Equal(t, host, exe, "warren up should have become warren-host")
		out, code := run(env, warren, "exec", "--", "echo", "hi")
		require.Equal(t, 0, code, out)
		require.Equal(t, "hi\n", out)
		out, code = run(env, warren, "exec", "--", "sh", "-c", "exit 7")
		require.Equal(t, 7, code, out)
		rec, err := readBrokerRecord(filepath.Join(filepath.Dir(warren), "data"))
		require.NoError(t, err)
		require.NotNil(t, rec)
		require.Equal(t, up.Process.Pid, rec.PID, "exec should have used the broker warren up recorded")
		// The signal reaches warren-host itself: it drains and exits 0.
		require.NoError(t, up.Process.Signal(syscall.SIGTERM))
		require.NoError(t, up.Wait())
	})

	t.Run("an ordinary user's up serves", func(t *testing.T) {
		// As root: the binaries, data dir and scratch root where uid
		// 65534 (no passwd entry needed) reaches them, and every process
		// run as that uid. As an ordinary user: as it is.
		dir, err := os.MkdirTemp("", "warren-unpriv-up-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o755))
		for _, name := range []string{"warren", "warren-host", "warren-sandbox-init", "warren-sandbox-agent"} {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(warren), name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o755))
		}
		home := filepath.Join(dir, "home")
		require.NoError(t, os.Mkdir(home, 0o700))
		var cred *syscall.Credential
		if os.Geteuid() == 0 {
			cred = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
			require.NoError(t, os.Chown(home, 65534, 65534))
		}
		as := func(c *exec.Cmd) *exec.Cmd {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			c.Dir = home
			c.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home,
				"WARREN_DATA_DIR=" + filepath.Join(home, "data"), "WARREN_LOG_LEVEL=warn"}
			return c
		}
		port := brokertest.FreePorts(t, 1)[0]
		up := startProcess(t, as(exec.Command(filepath.Join(dir, "warren"), "up", "--capacity", "2",
			"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--cluster-listen", "127.0.0.1:0")), "worker ready")
		c := as(exec.Command(filepath.Join(dir, "warren"), "exec", "--", "sh", "-c", "id -u; echo hi"))
		out, err := c.CombinedOutput()
		require.NoError(t, err, "%s", out)
		uid := os.Geteuid()
		if cred != nil {
			uid = int(cred.Uid)
		}
		// The sandbox maps the worker's own uid (no pool to take one from).
		require.Equal(t, fmt.Sprintf("%d\nhi\n", uid), string(out))
		require.NoError(t, up.Process.Signal(syscall.SIGTERM))
		require.NoError(t, up.Wait())
	})

	t.Run("worker's errors and exit status are warren-host's", func(t *testing.T) {
		fresh := append(env, "WARREN_DATA_DIR="+t.TempDir())
		c, cc := run(fresh, warren, "worker")
		h, hc := run(fresh, host, "worker")
		require.Equal(t, 1, cc, c)
		require.Equal(t, hc, cc)
		require.Equal(t, h, c)
		require.Contains(t, c, "no broker to serve")
	})

	t.Run("no warren-host: an error that says what to install", func(t *testing.T) {
		alone := filepath.Join(t.TempDir(), "warren")
		data, err := os.ReadFile(warren)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(alone, data, 0o755))
		var bare []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, hostBinaryEnvName+"=") {
				bare = append(bare, kv)
			}
		}
		bare = append(bare, "PATH=/usr/bin:/bin", "WARREN_DATA_DIR="+t.TempDir())
		for args, why := range map[string]string{"up": "needs warren-host", "exec -- true": "no broker is named"} {
			out, code := run(bare, alone, strings.Fields(args)...)
			require.Equal(t, 1, code, out)
			require.Contains(t, out, why)
			require.Contains(t, out, filepath.Join(filepath.Dir(alone), "warren-host"))
			require.Contains(t, out, "$PATH")
			require.Contains(t, out, "$"+hostBinaryEnvName)
			require.Contains(t, out, "make build")
		}
		// Commands that reach no broker run in the client, host or not.
		out, code := run(bare, alone, "sandbox", "run", "--", "/bin/echo", "ok")
		require.Equal(t, 0, code, out)
		require.Equal(t, "ok\n", out)
		keys := t.TempDir()
		out, code = run(bare, alone, "keys", "init", "--dir", keys)
		require.Equal(t, 0, code, out)
		require.FileExists(t, filepath.Join(keys, "pool-default.pub"))
		out, code = run(bare, alone, "auth", "init", "--dir", filepath.Join(t.TempDir(), "auth"))
		require.Equal(t, 0, code, out)
		// $WARREN_HOST_BINARY is the last place looked.
		out, code = run(append(bare, hostBinaryEnvName+"="+host), alone, "exec", "--", "echo", "via-env")
		require.Equal(t, 0, code, out)
		require.Equal(t, "via-env\n", out)
	})
}

// hostBinaryEnvName is host_exec.go's hostBinaryEnv (which only the client
// build compiles).
const hostBinaryEnvName = "WARREN_HOST_BINARY"
