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
	r, err := startedNew(Config{Isolation: IsolationAuto, ScratchRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	r.setupHost()
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"default", Spec{}},
		{"toolchain", Spec{ReadOnly: []string{"/usr/lib", "/etc/hostname"}}},
		{"network loopback", Spec{Network: NetworkLoopback}},
		{"empty toolchain list", Spec{ReadOnly: []string{}}},
		{"hidden path", Spec{ReadOnly: []string{"/usr/lib"}, Hide: []string{"/usr/lib/os-release-dir-none", "/usr/share"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &box{uid: 1_900_000_123, gid: 1_900_000_123, home: scratchDir{path: "/scratch/warren-x"}}
			// Landlock mode.
			ll := landlockMode{}
			want, _, err := ll.task(r, tc.spec, b)
			require.NoError(t, err)
			got, err := warmPolicy(r, ll, ll.warmKey(tc.spec), b)
			require.NoError(t, err)
			require.NotNil(t, got)
			require.JSONEq(t, mustJSON(t, want.Landlock), mustJSON(t, got))
			// Namespace mode with the layer.
			spec := tc.spec
			spec.Limits = spec.Limits.withDefaults(r.cfg.Defaults)
			ns := namespaceMode{}
			cfg, _, err := ns.task(r, spec, b)
			require.NoError(t, err)
			got, err = warmPolicy(r, ns, ns.warmKey(spec), b)
			require.NoError(t, err)
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
