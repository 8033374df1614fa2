// Command warren-sandbox-init is the sandbox init of warren workers: a
// small binary (no NATS, no CLI) the worker clones into a sandbox's
// namespaces to build its view, drop everything and exec the task. It is
// not meant to be run by hand; `make build` installs it next to `warren`,
// where the worker finds it. Build it with CGO_ENABLED=0: a static binary
// starts faster, and that start is on every cold sandbox's critical path.
// See package sandbox/initproc.
package main

import (
	"fmt"
	"os"

	"github.com/warrenhq/warren/sandbox/initproc"
)

func main() {
	// The worker passes its config pipe as fd 3; without it this was run
	// by hand.
	if _, err := os.Stat("/proc/self/fd/3"); err != nil {
		fmt.Fprintln(os.Stderr, "warren-sandbox-init: started by the warren worker only (no config on fd 3)")
		os.Exit(initproc.ExitSetup)
	}
	initproc.Main()
}
