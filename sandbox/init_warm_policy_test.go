package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWarmPolicyIsTheTasksPolicy: the Landlock policy a warm init builds
// ahead of its task is byte for byte the one the task then sends, for
// every view the warm key distinguishes, in both modes; otherwise the init
// would build a second ruleset on the task's critical path (it checks
// equality, so a mismatch costs time, never isolation:
// initproc.TestPreparedLandlockMatchesOnlyItsPolicy).
func TestWarmPolicyIsTheTasksPolicy(t *testing.T) {
	r, err := New(Config{Isolation: IsolationAuto, ScratchRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	r.nsInit()
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"default", Spec{}},
		{"toolchain", Spec{ReadOnly: []string{"/usr/lib", "/etc/hostname"}}},
		{"network loopback", Spec{Network: NetworkLoopback}},
		{"empty toolchain list", Spec{ReadOnly: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const scratch, uid = "/scratch/warren-x", 1_900_000_123
			// Landlock mode.
			want := r.landlockTask(tc.spec, scratch, uid, uid).Landlock
			got := r.warmPolicy(landlockKeyOf(tc.spec), scratch, uid, uid)
			require.NotNil(t, got)
			require.JSONEq(t, mustJSON(t, want), mustJSON(t, got))
			// Namespace mode with the layer.
			spec := tc.spec
			spec.Limits = spec.Limits.withDefaults(r.cfg.Defaults)
			cfg, _ := r.taskConfig(spec, scratch)
			got = r.warmPolicy(warmKeyOf(spec), scratch, uid, uid)
			require.Equal(t, cfg.Landlock == nil, got == nil)
			require.JSONEq(t, mustJSON(t, cfg.Landlock), mustJSON(t, got))
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
