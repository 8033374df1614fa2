package main

import (
	"os"
	"testing"

	"github.com/warrenhq/warren/sandbox"
)

// e2eMainEnv makes the test binary behave as the warren binary, so end-to-
// end tests run real `warren` processes (and can kill them).
const e2eMainEnv = "WARREN_E2E_MAIN"

func TestMain(m *testing.M) {
	sandbox.MaybeInit()
	if os.Getenv(e2eMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}
