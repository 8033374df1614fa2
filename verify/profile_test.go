package verify

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadDeployProfiles(t *testing.T) {
	t.Parallel()
	ps, err := LoadProfiles(filepath.Join("..", "deploy", "profiles.yaml"))
	require.NoError(t, err)
	require.Equal(t, []string{"coq", "coq-classical", "lean", "lean-repl"}, ps.Names())
	coq := ps.Get("coq")
	require.Equal(t, "/usr/bin/coqc", coq.Coq.Coqc)
	require.Empty(t, coq.AllowedAxioms)
	require.Equal(t, DefaultStepLimits.Processes, coq.Limits.Processes, "defaults fill unset limits")
	require.Equal(t, coq.Limits.Wall, coq.Limits.CPU, "CPU defaults to wall")
	require.Equal(t, DefaultLeanAxioms, ps.Get("lean").AllowedAxioms)
	require.Equal(t, 2, *ps.Get("lean-repl").Pool.Prewarm)
	require.Nil(t, ps.Get("missing"))
	require.Equal(t, AxiomsReject, coq.DeclaredAxioms, "declared axioms are rejected by default")
	require.Equal(t, HostIOReject, coq.HostIO, "host I/O is rejected by default")
}

func TestParseProfilesErrorsNameTheField(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, yaml, field string }{
		{"bad name", "profiles: [{name: Coq_1, kind: coq}]", "profiles[0].name"},
		{"no kind", "profiles: [{name: a}]", "profiles[0].kind"},
		{"unknown kind", "profiles: [{name: a, kind: agda}]", "profiles[0].kind"},
		{"relative toolchain", "profiles: [{name: a, kind: coq, toolchain: [usr]}]", "profiles[0].toolchain[0]"},
		{"negative limit", "profiles: [{name: a, kind: coq, limits: {memory_bytes: -1}}]", "profiles[0].limits"},
		{"negative disk", "profiles: [{name: a, kind: coq, limits: {disk_bytes: -1}}]", "profiles[0].limits.disk_bytes"},
		{"axiom inside the proof library", "profiles: [{name: a, kind: coq, allowed_axioms: [WarrenProof.x]}]", "profiles[0].allowed_axioms[0]"},
		{"unqualified coq axiom", "profiles: [{name: a, kind: coq, allowed_axioms: [classic]}]", "profiles[0].allowed_axioms[0]"},
		{"lean without project", "profiles: [{name: a, kind: lean-file}]", "profiles[0].lean.project"},
		{"repl without binary", "profiles: [{name: a, kind: lean-repl, lean: {project: /p}}]", "profiles[0].lean.repl"},
		{"prewarm above size", "profiles: [{name: a, kind: lean-repl, lean: {project: /p, repl: /r}, pool: {size: 1, prewarm: 2}}]", "profiles[0].pool.prewarm"},
		{"pool on coq", "profiles: [{name: a, kind: coq, pool: {size: 1}}]", "profiles[0].lean"},
		{"bad axiom policy", "profiles: [{name: a, kind: coq, declared_axioms: maybe}]", "profiles[0].declared_axioms"},
		{"bad host io policy", "profiles: [{name: a, kind: coq, host_io: sometimes}]", "profiles[0].host_io"},
		{"duplicate", "profiles: [{name: a, kind: coq}, {name: a, kind: coq}]", "profiles[1].name"},
		{"unknown field", "profiles: [{name: a, kind: coq, colour: red}]", ""},
		{"bad duration", "profiles: [{name: a, kind: coq, limits: {wall: soon}}]", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseProfiles([]byte(tc.yaml))
			var pe *ProfileError
			require.True(t, errors.As(err, &pe), "got %v", err)
			require.Equal(t, tc.field, pe.Field, pe.Error())
		})
	}
}

// TestProfileDiskLimitReachesTheSandbox: a profile's limits.disk_bytes is
// its steps' sandbox disk limit; without it the runner's default applies
// (zero here).
func TestProfileDiskLimitReachesTheSandbox(t *testing.T) {
	t.Parallel()
	ps, err := ParseProfiles([]byte("profiles: [{name: a, kind: coq, limits: {disk_bytes: 4096}}, {name: b, kind: coq}]"))
	require.NoError(t, err)
	require.Equal(t, int64(4096), ps.Get("a").sandboxLimits().Disk)
	require.Zero(t, ps.Get("b").sandboxLimits().Disk)
}
