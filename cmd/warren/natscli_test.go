package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// natscliVersion is the stock `nats` CLI the protocol walkthrough is
// checked with.
const natscliVersion = "v0.5.0"

// natsCLI returns the path of natscli at natscliVersion: the `nats` on
// PATH when it is that version (`make tools` installs it there), else one
// built once into the user's cache dir from the Go module proxy (the only
// network CI has). It fails, never skips, when it cannot be built: the
// walkthroughs must be checked.
func natsCLI(t *testing.T) string {
	t.Helper()
	if bin, err := exec.LookPath("nats"); err == nil {
		out, err := exec.Command(bin, "--version").Output()
		if err == nil && strings.TrimSpace(string(out)) == natscliVersion {
			return bin
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil { // no HOME: still cached, per machine
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "warren-test", "natscli-"+natscliVersion)
	bin := filepath.Join(dir, "nats")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	// Build into a directory of our own, then rename: concurrent test
	// processes never see a half-written binary.
	tmp, err := os.MkdirTemp(dir, "build-")
	require.NoError(t, err)
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	goBin, err := exec.LookPath("go") // go test puts its own go first on PATH
	require.NoError(t, err)
	c := exec.CommandContext(ctx, goBin, "install", "github.com/nats-io/natscli/nats@"+natscliVersion)
	c.Dir = tmp // outside this module: its go.mod must not apply
	c.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	out, err := c.CombinedOutput()
	require.NoError(t, err, "building natscli %s (needs the Go module proxy): %s", natscliVersion, out)
	require.NoError(t, os.Rename(filepath.Join(tmp, "nats"), bin))
	return bin
}

// The Makefile installs the natscli the walkthroughs are checked with.
func TestMakefileInstallsTheCheckedNatscli(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^NATSCLI\s*:=\s*github.com/nats-io/natscli/nats@(\S+)$`).FindSubmatch(data)
	require.NotNil(t, m, "the Makefile pins natscli as NATSCLI := github.com/nats-io/natscli/nats@VERSION")
	require.Equal(t, natscliVersion, string(m[1]))
}
