package sandbox

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runModes are the ways a run can start, for tests that must hold in every
// one: usageModes (namespace cold/warm/without cgroup, Landlock-only
// cold/warm/without cgroup) plus the layered mode cold (namespace with the
// Landlock layer; the warm namespace runner has the layer too).
func runModes() []usageMode {
	return append(usageModes(), usageMode{"layered cold", false, func(t *testing.T) (*Runner, Isolation) {
		r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: nsRunner(t).cfg.ScratchRoot})
		require.NoError(t, err)
		return r, IsolationNamespace
	}})
}

// modeRun runs spec in r (Isolation iso) with buffers as stdio, so a warm
// runner serves it from its pool when the view matches.
func modeRun(t *testing.T, r *Runner, iso Isolation, spec Spec) probeOut {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr, spec.Isolation = &out, &errb, iso
	if spec.Limits.Wall == 0 {
		spec.Limits.Wall = 30 * time.Second
	}
	res, err := r.Run(context.Background(), spec)
	require.NoError(t, err, "stdout: %s\nstderr: %s", out.String(), errb.String())
	return probeOut{res: res, stdout: out.String(), stderr: errb.String()}
}
