package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// TestDoctorInAContainerMapping0To65535 runs `warren doctor` as root of a
// user namespace that maps only ids 0..65535. With the automatic uid range
// both modes run; with --uid-base at the old default (unmapped there) no
// mode may be reported ok, and the report names the map and the fix
// instead of claiming "ok isolation auto" and hinting at the kernel.
func TestDoctorInAContainerMapping0To65535(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	env := []string{e2eMainEnv + "=1", "WARREN_LOG_LEVEL=warn", "WARREN_NATS_URL="}
	tests := []struct {
		name   string
		args   []string
		code   int
		checks map[string]string
		has    []string
		modes  string
	}{
		{
			name: "automatic range",
			checks: map[string]string{
				"sandbox uids":      "ok 64510..65533, mapped in /proc/self/uid_map \"0 100000 65536\"",
				"namespace mode":    "ok probe sandbox ran",
				"landlock mode":     "ok probe sandbox ran: landlock+seccomp",
				"landlock-mode IPC": "ok private: an IPC namespace per run",
				"isolation auto":    "ok namespace+landlock+seccomp",
			},
			modes: "namespace, landlock",
		},
		{
			name: "unmapped --uid-base",
			args: []string{"--uid-base", "1900000000"},
			code: 1,
			checks: map[string]string{
				"sandbox uids":        "NO sandbox config: UIDBase/UIDCount: sandbox: uid range not mapped in this user namespace: uids 1900000000..1900001023 (/proc/self/uid_map \"0 100000 65536\"",
				"namespace mode":      "NO sandbox config: UIDBase/UIDCount",
				"landlock mode":       "NO sandbox config: UIDBase/UIDCount",
				"isolation auto":      "NO refused",
				"isolation namespace": "NO refused",
				"isolation landlock":  "NO refused",
			},
			has:   []string{"fix: pass --uid-base/--uid-count", "automatic choice (here: 64510..65533)"},
			modes: "none: sandboxed tasks cannot run on this host",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := sandboxtest.RunInMappedContainer(t, exe, env, append([]string{"doctor"}, tt.args...)...)
			requireDoctor(t, out, err, tt.code, tt.checks, tt.modes)
			for _, s := range tt.has {
				require.Contains(t, out, s)
			}
		})
	}
}
