// Command warren-sandbox-agent is the agent of a stateful sandbox session:
// the one long-lived command of the sandbox, which runs the session's
// commands on the worker's request (package sandbox/session/agent). It is
// not meant to be run by hand; `make build` installs it next to `warren`,
// where the worker finds it. Build it with CGO_ENABLED=0: it runs inside
// sandboxes whose view may hold no libc the binary was linked against.
package main

import (
	"os"

	"github.com/warrenhq/warren/sandbox/session/agent"
)

func main() {
	os.Exit(agent.Main())
}
