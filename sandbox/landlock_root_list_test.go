package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// TestLayeredModeListsTheViewRoot: in the layered mode / is the private
// view, all of it meant to be visible, so `ls /` and `ls /dev` work under
// the Landlock layer too (InForce says the layer is on).
func TestLayeredModeListsTheViewRoot(t *testing.T) {
	llRequire(t, landlockMinABIDefault)
	sandboxtest.RequireUserNS(t)
	r := autoRunner(t, 1_900_100_800, 0)
	res, out := autoRun(t, r, Spec{Argv: []string{"/bin/sh", "-c", "ls / && echo -- && ls /dev"}, Isolation: IsolationNamespace})
	require.Equal(t, layersLayered.String(), res.InForce)
	require.Equal(t, 0, res.ExitCode, out)
	root, dev, ok := strings.Cut(out, "--\n")
	require.True(t, ok, out)
	require.Subset(t, strings.Fields(root), []string{"dev", "etc", "proc", "tmp", "usr"})
	require.Subset(t, strings.Fields(dev), []string{"null", "urandom", "shm"})
}

// TestLandlockOnlyModeDoesNotListTheHostRoot: in the Landlock-only mode /
// is the host's root: listing it succeeds unsandboxed (the control) and
// stays denied inside, as every directory without a rule is.
func TestLandlockOnlyModeDoesNotListTheHostRoot(t *testing.T) {
	llRequire(t, landlockMinABIDefault)
	bin := llTestBinary(t)
	probe := []string{"list", "/"}
	require.Equal(t, 0, llProbeMain(probe), "control: the test lists / unsandboxed")
	r := autoRunner(t, 1_900_100_810, 0)
	res, out := autoRun(t, r, Spec{
		Argv:      append([]string{bin}, probe...),
		Env:       map[string]string{llEnvProbe: "1"},
		ReadOnly:  []string{filepath.Dir(bin)},
		Isolation: IsolationLandlock,
	})
	require.Equal(t, layersLandlockOnly.String(), res.InForce)
	require.Equal(t, llExitDenied, res.ExitCode, "listing the host / must be denied: %s", out)
	require.Contains(t, out, "permission denied")
}

// TestLandlockListOnlyRuleListsButDoesNotRead: the rule the layered mode
// puts on its view's root grants listing and nothing else: a file under it
// can be read and executed unsandboxed (the control) but not inside, and
// without the rule the listing is denied too.
func TestLandlockListOnlyRuleListsButDoesNotRead(t *testing.T) {
	llRequire(t, landlockMinABIDefault)
	sb := llNewSandbox(t, llTestBinary(t), -1)
	dir := llTempDir(t, 0o755)
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	script := filepath.Join(dir, "x")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755))

	listOnly := sb.policy(t, NetworkNone)
	listOnly.ListOnly = []string{dir}
	tests := []struct {
		name   string
		policy *landlockPolicy
		probe  []string
		inside int
	}{
		{"list with the rule", listOnly, []string{"list", dir}, 0},
		{"list without the rule", sb.policy(t, NetworkNone), []string{"list", dir}, llExitDenied},
		{"read a file under the rule", listOnly, []string{"read", file}, llExitDenied},
		{"exec a file under the rule", listOnly, []string{"exec", script}, llExitDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv := append([]string{"probe"}, tt.probe...)
			code, out := sb.run(t, nil, argv...)
			require.Equal(t, 0, code, "control (no sandbox) must succeed: %s", out)
			code, out = sb.run(t, tt.policy, argv...)
			require.Equal(t, tt.inside, code, out)
			if tt.inside == llExitDenied {
				require.Contains(t, out, "permission denied")
			}
		})
	}
}

// TestLandlockPolicyListsOnlyAPrivateRoot: only the layered view gets the
// list rule on /, and / appears in no other rule of either mode.
func TestLandlockPolicyListsOnlyAPrivateRoot(t *testing.T) {
	for _, private := range []bool{false, true} {
		p := newLandlockPolicy(landlockView{Home: "/home/x", PrivateRoot: private})
		for _, paths := range [][]string{p.ReadExec, p.ReadOnly, p.Devices, p.ReadWrite} {
			require.NotContains(t, paths, "/")
		}
		if private {
			require.Equal(t, []string{"/"}, p.ListOnly)
		} else {
			require.Empty(t, p.ListOnly)
		}
	}
}
