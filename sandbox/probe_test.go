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
