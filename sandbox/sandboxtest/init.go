package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// InitEnv names a prebuilt cmd/warren-sandbox-init (set by mk/sandbox.mk).
const InitEnv = "WARREN_SANDBOX_TEST_INIT"

// AgentEnv names a prebuilt cmd/warren-sandbox-agent (the same variable
// package sandbox/session's tests read).
const AgentEnv = "WARREN_SESSION_TEST_AGENT"

// BuildInit returns the dedicated sandbox init for tests and benchmarks
// outside package sandbox, built as `make build` does (static), so they
// measure what production runs. It returns "" (the runner then re-execs
// the test binary) when no Go toolchain is available.
func BuildInit(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(InitEnv); p != "" {
		return p
	}
	dir := binDir(tb)
	bin, err := Build(dir, "warren-sandbox-init", "github.com/warrenhq/warren/cmd/warren-sandbox-init")
	if err != nil {
		tb.Logf("no dedicated init (%v): the runner re-execs the test binary", err)
		return ""
	}
	return bin
}

// InitForMain is BuildInit for a TestMain (no testing.TB): InitEnv when
// set, else the init built in a 0755 directory; remove deletes what it
// built. Without a Go toolchain it returns "" (the runner then re-execs
// the test binary, which must call sandbox.MaybeInit first).
func InitForMain() (bin string, remove func()) {
	if p := os.Getenv(InitEnv); p != "" {
		return p, func() {}
	}
	dir, err := os.MkdirTemp("", "warren-init-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // sandbox uids of a root run must reach it
	}
	if err == nil {
		bin, err = Build(dir, "warren-sandbox-init", "github.com/warrenhq/warren/cmd/warren-sandbox-init")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "no dedicated sandbox init (%v): the runner re-execs the test binary\n", err)
		_ = os.RemoveAll(dir)
		return "", func() {}
	}
	return bin, func() { _ = os.RemoveAll(dir) }
}

// BuildAgent returns the sandbox session agent (cmd/warren-sandbox-agent)
// for tests outside package sandbox/session: AgentEnv when set, else built
// as `make build` does (static) in a directory sandbox uids of a root
// worker can search, removed when tb ends. There is no fallback: a session
// needs the agent, so a failed build fails tb.
func BuildAgent(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(AgentEnv); p != "" {
		return p
	}
	bin, err := Build(binDir(tb), "warren-sandbox-agent", "github.com/warrenhq/warren/cmd/warren-sandbox-agent")
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// AgentForMain is BuildAgent for a TestMain (no testing.TB): AgentEnv
// when set, else the agent built in a 0755 directory; remove deletes what
// it built.
func AgentForMain() (bin string, remove func(), err error) {
	if p := os.Getenv(AgentEnv); p != "" {
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "warren-agent-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // sandbox uids of a root run must reach it
	}
	if err == nil {
		bin, err = Build(dir, "warren-sandbox-agent", "github.com/warrenhq/warren/cmd/warren-sandbox-agent")
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	return bin, func() { _ = os.RemoveAll(dir) }, nil
}

// binDir is a directory of mode 0755 (t.TempDir's parent is 0700, which
// a root worker's sandbox uids cannot pass) removed when tb ends.
func binDir(tb testing.TB) string {
	dir, err := os.MkdirTemp("", "warren-bin-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// Build builds package pkg static (CGO_ENABLED=0, as `make build`) as
// dir/name, for a TestMain that has no testing.TB.
func Build(dir, name, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v: %s", pkg, err, out)
	}
	return bin, nil
}
