package sandbox

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/warrenhq/warren/sandbox/initproc"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// TestAutoFallsBackWhenNamespacesCannotMount: on a host that lets a user
// namespace be created but gives it no power to mount (Ubuntu's AppArmor
// restriction of unprivileged user namespaces), the namespace mode is
// unavailable, typed so, and auto runs the Landlock mode instead of
// failing every task. The control: unconfined, auto picks the namespaces.
func TestAutoFallsBackWhenNamespacesCannotMount(t *testing.T) {
	llRequire(t, landlockMinABIDefault)
	if !inContainerChild(t) {
		controlThenChild(t, 1_900_100_630, sandboxtest.ContainerUsernsWithoutMounts)
		return
	}
	// The child's own confinement: mounts are refused (unconfined, this
	// bogus mount fails with ENOENT, or EPERM only for a non-root user).
	require.ErrorIs(t, unix.Mount("", "/nonexistent-warren", "", 0, ""), unix.EPERM)

	for _, prestart := range []int{0, 1} {
		r := autoRunner(t, 1_900_100_630, prestart)
		_, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Isolation: IsolationNamespace})
		require.ErrorIs(t, err, ErrUnavailable, "prestart %d", prestart)
		var se *SetupError
		require.ErrorAs(t, err, &se)
		require.Equal(t, string(initproc.StepMakePrivate), se.Step)
		require.ErrorIs(t, err, unix.EPERM)

		res, out := autoRun(t, r, Spec{Argv: []string{"/usr/bin/python3", "-c", "import json; print(json.dumps([6*7]))"}})
		require.Equal(t, 0, res.ExitCode, out)
		require.Equal(t, layersLandlockOnly.String(), res.InForce, "prestart %d: %s", prestart, out)
		require.Equal(t, "[42]\n", out)
	}
}
