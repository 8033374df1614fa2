package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// A `warren` process started with sandboxtest.ContainerEnv confines itself
// like a container under Docker's default seccomp profile before main runs.
func init() { sandboxtest.EnterContainer() }

// TestDoctorReportsTheLandlockFallback runs `warren doctor` unconfined (the
// control: namespaces work here), then confined so that the kernel refuses
// namespaces, then Landlock too: it must say namespaces are unavailable and
// what auto gives instead, and exit 1 only when nothing is left.
func TestDoctorReportsTheLandlockFallback(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	tests := []struct {
		name      string
		container string // sandboxtest.ContainerEnv; "" runs unconfined
		code      int
		checks    map[string]string // check name -> "ok"/"NO" + detail prefix
		modes     string
	}{
		{
			name: "unconfined (control)",
			checks: map[string]string{
				"namespace mode":    "ok probe sandbox ran",
				"landlock-mode IPC": "ok private: an IPC namespace per run",
				"isolation auto":    "ok namespace+landlock+seccomp",
			},
			modes: "namespace, landlock",
		},
		{
			name:      "namespaces refused",
			container: sandboxtest.ContainerNoNamespaces,
			checks: map[string]string{
				"seccomp on the worker": "NO Seccomp: 2",
				"namespace mode":        "NO sandbox setup failed at start init",
				"landlock mode":         "ok probe sandbox ran: landlock+seccomp",
				"landlock-mode IPC":     "ok refused by seccomp (this worker cannot make an IPC namespace)",
				"isolation auto":        "ok landlock+seccomp",
				"isolation namespace":   "NO refused (its probe sandbox failed: see namespace mode)",
			},
			modes: "landlock",
		},
		{
			name:      "namespaces and Landlock refused",
			container: sandboxtest.ContainerNoNamespacesNoLandlock,
			code:      1,
			checks: map[string]string{
				"namespace mode": "NO sandbox setup failed at start init",
				"landlock layer": "NO kernel ABI 0",
				"isolation auto": "NO refused (no isolation available)",
			},
			modes: "none: sandboxed tasks cannot run on this host",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "doctor")
			cmd.Env = append(os.Environ(), e2eMainEnv+"=1", "WARREN_LOG_LEVEL=warn")
			if tt.container != "" {
				cmd.Env = append(cmd.Env, sandboxtest.ContainerEnv+"="+tt.container)
			}
			out, err := cmd.Output()
			requireDoctor(t, string(out), err, tt.code, tt.checks, tt.modes)
		})
	}
}

// requireDoctor checks a `warren doctor` run: its exit code, that each
// named check's "mark detail" starts as given, and the usable modes.
func requireDoctor(t *testing.T, out string, err error, code int, checks map[string]string, modes string) {
	t.Helper()
	if code == 0 {
		require.NoError(t, err, out)
	} else {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, out)
		require.Equal(t, code, ee.ExitCode(), out)
	}
	got := doctorChecks(out)
	for name, want := range checks {
		require.True(t, strings.HasPrefix(got[name], want), "check %q: want %q, got %q\n%s", name, want, got[name], out)
	}
	require.Contains(t, out, "usable isolation modes: "+modes+"\n")
}

// doctorLine is one check line of `warren doctor`: mark, name, detail.
var doctorLine = regexp.MustCompile(`^(ok|NO)  +(\S.*?)  +(.*)$`)

// doctorChecks maps each check's name to "mark detail".
func doctorChecks(out string) map[string]string {
	m := map[string]string{}
	for l := range strings.SplitSeq(out, "\n") {
		if g := doctorLine.FindStringSubmatch(l); g != nil {
			m[g[2]] = g[1] + " " + g[3]
		}
	}
	return m
}
