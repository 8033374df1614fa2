package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The client build links none of what it does not run, each of which
// costs every command's start in package inits: the checkers and their
// YAML (verify; `warren verify` needs verify/batchfile alone), the
// embedded nats-server, and go-seccomp-bpf's syscall tables (the sandbox
// loads a generated program on amd64).
func TestClientBuildLinksOnlyWhatItRuns(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "client", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/warrenhq/warren/verify/batchfile")
	for _, dep := range deps {
		for _, banned := range []string{"github.com/warrenhq/warren/verify", "sigs.k8s.io/yaml", "github.com/nats-io/nats-server/v2/server"} {
			require.NotEqual(t, banned, dep, "the client build links %s", dep)
		}
		if runtime.GOARCH == "amd64" { // elsewhere the sandbox assembles with the library
			require.NotContains(t, dep, "go-seccomp-bpf", "the client build links %s", dep)
		}
	}
}
