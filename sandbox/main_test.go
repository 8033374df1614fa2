package sandbox

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeInit()
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(helperMain(h))
	}
	os.Exit(m.Run())
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
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	r, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: os.Getenv("WARREN_SANDBOX_TEST_ROOT")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r.ns.noLayer = true
	_, err = r.Run(context.Background(), Spec{Argv: argv, Stdout: os.Stdout, Limits: Limits{Wall: time.Minute}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}
