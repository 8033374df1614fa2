package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// InitEnv names a prebuilt cmd/warren-sandbox-init (set by mk/sandbox.mk).
const InitEnv = "WARREN_SANDBOX_TEST_INIT"

// BuildInit returns the dedicated sandbox init for tests and benchmarks
// outside package sandbox, built as `make build` does (static), so they
// measure what production runs. It returns "" (the runner then re-execs
// the test binary) when no Go toolchain is available.
func BuildInit(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(InitEnv); p != "" {
		return p
	}
	dir, err := os.MkdirTemp("", "warren-init-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "warren-sandbox-init")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/warrenhq/warren/cmd/warren-sandbox-init")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Logf("no dedicated init (%v: %s): the runner re-execs the test binary", err, out)
		return ""
	}
	return bin
}
