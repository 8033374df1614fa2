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

// helperEnv makes the test binary act as a worker for tests that must kill
// the worker itself.
const helperEnv = "WARREN_SANDBOX_TEST_HELPER"

// helperMain runs one sandbox with the argv in WARREN_SANDBOX_TEST_ARGV
// (space separated) under a scratch root from WARREN_SANDBOX_TEST_ROOT.
func helperMain(mode string) int {
	switch mode {
	case "hold":
		r, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: os.Getenv("WARREN_SANDBOX_TEST_ROOT")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		_, err = r.Run(context.Background(), Spec{
			Argv:   []string{"/bin/sh", "-c", os.Getenv("WARREN_SANDBOX_TEST_SCRIPT")},
			Limits: Limits{Wall: time.Minute},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}
