package sandbox

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

func TestProbeLaunchesARealSandbox(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	rep := Probe(context.Background(), Config{})
	var out bytes.Buffer
	_, err := rep.WriteTo(&out)
	require.NoError(t, err)
	t.Log("\n" + out.String())
	require.True(t, rep.Usable(), out.String())
	require.Contains(t, rep.Modes, IsolationNamespace)
	require.Contains(t, out.String(), "probe sandbox ran")
	// The Landlock part: the ABI line, the mode's own probe sandbox, and
	// what each isolation value gives here.
	for _, name := range []string{"landlock layer", "landlock mode", "isolation auto", "isolation namespace", "isolation landlock"} {
		require.Contains(t, out.String(), name)
	}
	if landlockABI().require(landlockMinABIDefault) == nil {
		require.Contains(t, rep.Modes, IsolationLandlock)
		require.Contains(t, out.String(), "probe sandbox ran: "+layersLandlockOnly.String())
	}
}

func TestProbeReportsAFailedSandboxWithAFix(t *testing.T) {
	// A scratch root the sandbox uid cannot traverse makes setup fail at a
	// real step: the report must say so, not claim support.
	sandboxtest.RequireUserNS(t)
	c := probeNamespace(context.Background(), Config{ScratchRoot: t.TempDir() + "/nested"})
	if c.OK {
		// Not root: the scratch root is the user's own and reachable.
		require.NotEqual(t, 0, currentUID())
		return
	}
	require.Contains(t, c.Detail, "sandbox setup failed at")
	require.NotEmpty(t, c.Fix)
}

// TestProbeLandlockModeHonoursTheDiskLimit: the Landlock-only probe runs
// with the worker's disk limit (Config.Defaults.Disk, what `warren doctor
// --disk` passes), so where the limit cannot be enforced (an ordinary
// user cannot mount the home's tmpfs) doctor does not report the mode
// usable, and names the fix; as root, which can, it does. Without a limit
// the ordinary user's mode works (the control).
func TestProbeLandlockModeHonoursTheDiskLimit(t *testing.T) {
	llRequire(t, landlockMinABIDefault)
	mode := func(disk int64) Check {
		checks, _ := probeLandlock(context.Background(), Config{Defaults: Limits{Disk: disk}}, true)
		for _, c := range checks {
			if c.Name == "landlock mode" {
				return c
			}
		}
		t.Fatal("no landlock mode check")
		return Check{}
	}
	limited := mode(64 << 20)
	if currentUID() == 0 {
		require.True(t, limited.OK, limited.Detail)
		return
	}
	require.False(t, limited.OK, "an ordinary user's Landlock-only mode cannot enforce a disk limit")
	require.Contains(t, limited.Detail, "disk limit cannot be enforced")
	require.Contains(t, limited.Fix, "--disk unbounded")
	unbounded := mode(-1)
	require.True(t, unbounded.OK, unbounded.Detail)
}
