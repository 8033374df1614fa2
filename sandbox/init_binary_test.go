package sandbox

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInitViaProcSelfExe keeps the fallback path working: a Runner with
// no separate init binary re-executes its own binary (MaybeInit), in the
// namespace and the Landlock mode.
func TestInitViaProcSelfExe(t *testing.T) {
	base := nsRunner(t)
	cfg := base.cfg
	cfg.InitPath = selfExe
	r, err := New(cfg)
	require.NoError(t, err)
	require.Equal(t, selfExe, r.init.exec)
	r.ns.noLayer.Store(true)
	o := runIn(t, r, Spec{Argv: sh(`test ! -e /root && echo isolated; grep NoNewPrivs /proc/self/status; echo $$`)})
	require.Equal(t, "isolated\nNoNewPrivs:\t1\n1\n", o.stdout, o.stderr)
	if landlockABI().require(landlockMinABIDefault) != nil {
		return // the Landlock mode has its own ABI tests
	}
	res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Isolation: IsolationLandlock})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, inForceLandlock, res.InForce)
}

// TestDedicatedInitIsExecutedThroughItsDescriptor: a configured init is
// opened once and run as /proc/self/fd/N, so the sandbox uid needs no
// access to its directory; a missing one fails New with the step.
func TestDedicatedInitIsExecutedThroughItsDescriptor(t *testing.T) {
	if testInitPath == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI must run the suite with the dedicated init (no Go toolchain and no " + testInitEnv + ")")
		}
		t.Skip("no dedicated init built (no Go toolchain); the suite runs on /proc/self/exe")
	}
	r := nsRunner(t)
	require.Equal(t, testInitPath, r.cfg.InitPath)
	require.Regexp(t, `^/proc/self/fd/\d+$`, r.init.exec)
	o := runIn(t, r, Spec{Argv: sh(`echo ran`)})
	require.Equal(t, "ran\n", o.stdout)

	_, err := New(Config{InitPath: "/nonexistent/warren-sandbox-init", ScratchRoot: r.cfg.ScratchRoot})
	var se *SetupError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "open sandbox init", se.Step)
}
