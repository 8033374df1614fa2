package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/warrenhq/warren/sandbox"
	"go.uber.org/goleak"
)

// testAgentEnv and testInitEnv name prebuilt binaries (for a run as
// another user, which cannot build); otherwise TestMain builds both as
// `make build` does (static).
const (
	testAgentEnv = "WARREN_SESSION_TEST_AGENT"
	testInitEnv  = "WARREN_SANDBOX_TEST_INIT"
)

var testInitPath string

func TestMain(m *testing.M) {
	sandbox.MaybeInit()
	var dir string
	testAgentPath, testInitPath = os.Getenv(testAgentEnv), os.Getenv(testInitEnv)
	if testAgentPath == "" || testInitPath == "" {
		var err error
		dir, err = os.MkdirTemp("", "warren-session-bin-")
		if err == nil {
			// Sandbox uids of a root run must reach the agent.
			err = os.Chmod(dir, 0o755)
		}
		if err == nil && testAgentPath == "" {
			testAgentPath, err = build(dir, AgentBinaryName, "github.com/warrenhq/warren/cmd/warren-sandbox-agent")
		}
		if err == nil && testInitPath == "" {
			testInitPath, err = build(dir, "warren-sandbox-init", "github.com/warrenhq/warren/cmd/warren-sandbox-init")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "session tests:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	if code == 0 {
		// Sessions own their goroutines: Close waits for them.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func build(dir, name, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v: %s", pkg, err, out)
	}
	return bin, nil
}
