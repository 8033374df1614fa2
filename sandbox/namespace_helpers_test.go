package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// nsRunner returns a namespace-mode Runner with a private scratch root.
func nsRunner(t *testing.T) *Runner {
	t.Helper()
	sandboxtest.RequireUserNS(t)
	// The sandbox uid of a root worker must be able to reach its scratch:
	// t.TempDir's parent is 0700.
	root, err := os.MkdirTemp("", "warren-nstest-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(root)) })
	require.NoError(t, os.Chmod(root, 0o711))
	// Not started: these runs cover a Run before Start (cold).
	r, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: root})
	require.NoError(t, err)
	r.noLayer.Store(true) // these tests prove the namespace layer alone
	return r
}

type probeOut struct {
	res            *Result
	stdout, stderr string
}

// runIn runs argv in a namespace sandbox and returns its result and output.
func runIn(t *testing.T, r *Runner, spec Spec) probeOut {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	if spec.Limits.Wall == 0 {
		spec.Limits.Wall = 30 * time.Second
	}
	res, err := r.Run(context.Background(), spec)
	require.NoError(t, err, "stderr: %s", errb.String())
	return probeOut{res: res, stdout: out.String(), stderr: errb.String()}
}

// runOut runs argv on the host (the control) and returns its exit code.
func runOut(t *testing.T, argv ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		require.NoError(t, err)
	}
	return 0, string(out)
}

const python = "/usr/bin/python3"

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func py(script string) []string { return []string{python, "-c", script} }

// hostFile writes a file in a fresh world-readable host directory outside
// any allow-listed path and returns its path.
func hostFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(hostDir(t), "secret.txt")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// hostDir is a fresh host directory the sandbox uid can traverse to (unlike
// t.TempDir, whose parent is 0700), mode 0755.
func hostDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "warren-nstest-dir-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	require.NoError(t, os.Chmod(d, 0o755))
	return d
}
