package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// e2eMainEnv makes the test binary behave as the warren binary, so end-to-
// end tests run real `warren` processes (and can kill them).
const e2eMainEnv = "WARREN_E2E_MAIN"

func TestMain(m *testing.M) {
	sandbox.MaybeInit()
	if os.Getenv(e2eMainEnv) == "1" {
		main()
	}
	removeAgent := agentForWorkers()
	code := m.Run()
	removeAgent()
	os.Exit(code)
}

// agentForWorkers gives the `warren worker` processes of the tests the
// session agent (through WARREN_SESSION_AGENT, which they inherit), as
// `make build` puts it next to warren: sandboxtest.AgentEnv's, else built
// once. It returns what removes it.
func agentForWorkers() func() {
	if os.Getenv("WARREN_SESSION_AGENT") != "" {
		return func() {}
	}
	bin, remove, err := sandboxtest.AgentForMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmd/warren tests: the session agent:", err)
		os.Exit(1)
	}
	_ = os.Setenv("WARREN_SESSION_AGENT", bin)
	return remove
}
