package sandbox

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 0 && os.Args[0] == initArg0 {
		// The suite's own init (InitPath /proc/self/exe) runs from a
		// goroutine kept off the main thread (the main goroutine holds it):
		// the init must not depend on which thread execs the task, since the
		// parent-death signal is a per-thread setting
		// (TestTaskKeepsParentDeathSignal).
		runtime.LockOSThread()
		go MaybeInit()
		select {}
	}
	testInitPath = testInit()
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helperMain(h))
	}
	code := m.Run()
	if testInitBuilt != "" {
		_ = os.RemoveAll(filepath.Dir(testInitBuilt))
	}
	if code == 0 {
		// Runners own their goroutines (warm pool, teardown): Close and
		// each run wait for them, so none may outlive the tests.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testInitEnv names a prebuilt cmd/warren-sandbox-init for the suite (set
// by mk/sandbox.mk, and by TestMain for the helper processes it starts).
const testInitEnv = "WARREN_SANDBOX_TEST_INIT"

// testInitBuilt is the init TestMain built (removed at the end).
var testInitBuilt string

// testInit returns the dedicated init the suite runs with, as production
// does: the one named by testInitEnv, else one built now. Without a Go
// toolchain the suite falls back to re-executing the test binary
// (TestInitViaProcSelfExe covers that path in every run).
func testInit() string {
	if p := os.Getenv(testInitEnv); p != "" {
		return p
	}
	dir, err := os.MkdirTemp("", "warren-init-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox tests: building the init:", err)
		return ""
	}
	bin := filepath.Join(dir, initBinaryName)
	// As `make build` does: static (no cgo, whose start is on every cold run's path).
	cmd := exec.Command("go", "build", "-o", bin, "github.com/warrenhq/warren/cmd/warren-sandbox-init")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox tests: no Go toolchain to build the init (%v: %s); using /proc/self/exe\n", err, out)
		_ = os.RemoveAll(dir)
		return ""
	}
	testInitBuilt = bin
	_ = os.Setenv(testInitEnv, bin)
	return bin
}

// helperEnv makes the test binary act as a worker, for tests that must
// kill the worker itself or start it with particular credentials.
const helperEnv = "WARREN_SANDBOX_TEST_HELPER"

// helperMain runs one namespace sandbox (Landlock layer off) under the
// scratch root in WARREN_SANDBOX_TEST_ROOT. Modes: "hold" runs the shell
// script in WARREN_SANDBOX_TEST_SCRIPT; "status" prints the sandbox's
// /proc/self/status.
func helperMain(mode string) int {
	var argv []string
	switch mode {
	case "hold":
		argv = []string{"/bin/sh", "-c", os.Getenv("WARREN_SANDBOX_TEST_SCRIPT")}
	case "status":
		argv = []string{"/bin/cat", "/proc/self/status"}
	case "container":
		return containerHelper()
	case "scratch":
		return scratchHelper()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: os.Getenv("WARREN_SANDBOX_TEST_ROOT")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r.noLayer.Store(true)
	_, err = r.Run(context.Background(), Spec{Argv: argv, Stdout: os.Stdout, Limits: Limits{Wall: time.Minute}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}
