package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// The auto-fallback tests re-run themselves in a child of the test binary
// confined like a container under Docker's default seccomp profile
// (sandboxtest.EnterContainer): the kernel really refuses the namespaces
// there, and nothing changes for the rest of the host. The parent runs the
// control (unconfined, auto picks the namespaces) and requires the child's
// run of the same test to pass.
func init() { sandboxtest.EnterContainer() }

// containerChildEnv names the test a confined child runs.
const containerChildEnv = "WARREN_SANDBOX_TEST_CONTAINER_CHILD"

// inContainerChild reports whether this process is the confined child
// running t.
func inContainerChild(t *testing.T) bool {
	return os.Getenv(containerChildEnv) == t.Name()
}

// runInContainerChild re-runs t in a child confined by mode (a
// sandboxtest.Container* value) and requires that it ran and passed.
func runInContainerChild(t *testing.T, mode string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), sandboxtest.ContainerEnv+"="+mode, containerChildEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("confined child (%s):\n%s", mode, out)
	require.NoError(t, err, "the confined child failed")
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the confined child must run the test, not skip it")
}

// controlThenChild is the parent's half of a fallback test: the control
// (unconfined, auto picks the namespaces here), then the same test in a
// child confined by mode.
func controlThenChild(t *testing.T, uidBase uint32, mode string) {
	t.Helper()
	sandboxtest.RequireUserNS(t)
	res, out := autoRun(t, autoRunner(t, uidBase, 0), Spec{Argv: []string{"/bin/true"}})
	require.Equal(t, layersLayered.String(), res.InForce, out)
	runInContainerChild(t, mode)
}

// requireNamespacesRefused is the child's check of its own confinement:
// the kernel refuses namespaces as a container's profile does.
func requireNamespacesRefused(t *testing.T) {
	t.Helper()
	require.ErrorIs(t, unix.Unshare(unix.CLONE_NEWUSER), unix.EPERM, "unshare(CLONE_NEWUSER) must be refused")
	// Null arguments: unconfined this is EFAULT, never a fork.
	_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	require.Equal(t, unix.ENOSYS, errno, "clone3 must be ENOSYS")
}

// autoRunner is an auto-mode Runner with a private scratch root and uid
// range (as root).
func autoRunner(t *testing.T, base uint32, prestart int) *Runner {
	t.Helper()
	r, err := startedNew(Config{ScratchRoot: llTempDir(t, 0o711), UIDBase: base, UIDCount: 4, Prestart: prestart})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

// autoRun runs spec and returns the result and the combined output.
func autoRun(t *testing.T, r *Runner, spec Spec) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &out
	res, err := r.Run(context.Background(), spec)
	require.NoError(t, err, out.String())
	return res, out.String()
}

// TestAutoFallsBackToLandlockWithoutNamespaces: where a container's
// seccomp profile refuses namespaces, auto runs the Landlock-only mode,
// says so in InForce, and its boundaries hold: each probe succeeds in the
// confined child unsandboxed (the control) and is denied inside.
func TestAutoFallsBackToLandlockWithoutNamespaces(t *testing.T) {
	llRequire(t, landlockMinABIDefault)
	if !inContainerChild(t) {
		controlThenChild(t, 1_900_100_600, sandboxtest.ContainerNoNamespaces)
		return
	}
	requireNamespacesRefused(t)
	r := autoRunner(t, 1_900_100_600, 0)

	// Asked for explicitly, the namespace mode is unavailable: typed, and
	// naming the kernel's refusal.
	_, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Isolation: IsolationNamespace})
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, unix.EPERM)
	var se *SetupError
	require.ErrorAs(t, err, &se)
	require.Equal(t, stepStartInit, se.Step)

	t.Run("python3 with its standard library", func(t *testing.T) {
		for _, prestart := range []int{0, 1} {
			// With Prestart the warm pool's namespace sandboxes fail to
			// build; runs must still fall back.
			rr := r
			if prestart > 0 {
				rr = autoRunner(t, 1_900_100_610, prestart)
			}
			res, out := autoRun(t, rr, Spec{Argv: []string{"/usr/bin/python3", "-c",
				"import json, sqlite3, ssl, hashlib, subprocess, tempfile, decimal\n" +
					"f = tempfile.NamedTemporaryFile(delete=False); f.write(b'x'); f.close()\n" +
					"assert subprocess.run(['true']).returncode == 0\n" +
					"print(json.dumps(hashlib.sha256(b'x').hexdigest()))"}})
			require.Equal(t, 0, res.ExitCode, "prestart %d: %s", prestart, out)
			require.Equal(t, layersLandlockOnly.String(), res.InForce, "prestart %d: the Landlock-only layers, not namespace", prestart)
			require.Contains(t, out, fmt.Sprintf("%x", sha256.Sum256([]byte("x"))))
			if prestart > 0 {
				// The namespace mode's refusal stops only its own warm pool:
				// the Landlock mode, the one this host runs, stays warm.
				spec := Spec{Limits: Limits{}.withDefaults(rr.cfg.Defaults)}
				require.Eventually(t, func() bool { return rr.warm.ready(landlockMode{}.warmKey(spec)) == prestart },
					20*time.Second, 5*time.Millisecond, "the Landlock warm pool refills")
				before := scratchDirs(t, rr)
				res, out := autoRun(t, rr, Spec{Argv: []string{"/bin/sh", "-c", "echo $HOME"}})
				require.Equal(t, layersLandlockOnly.String(), res.InForce, out)
				home := strings.TrimSpace(out)
				require.True(t, before[home], "the run took a warm Landlock sandbox: its home %s existed before (%v)", home, before)
			}
		}
	})

	t.Run("boundaries", func(t *testing.T) {
		host := newHostFixtures(t)
		bin := llTestBinary(t)
		tests := []struct {
			name  string
			probe []string
			root  bool // the control needs root
			// denied is the errno text the denial must carry.
			denied []string
		}{
			{name: "read /etc/shadow", probe: []string{"read", "/etc/shadow"}, root: true, denied: []string{"permission denied"}},
			{name: "read a world-readable file in an unlisted dir", probe: []string{"read", host.secret}, denied: []string{"permission denied"}},
			{name: "write a host-writable file outside the home", probe: []string{"write", host.writable}, denied: []string{"permission denied"}},
			// seccomp refuses the inet socket itself; Landlock the connect.
			{name: "tcp connect with network none", probe: []string{"tcp-connect", host.tcpAddr}, denied: []string{"address family not supported", "permission denied"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.root && os.Geteuid() != 0 {
					t.Skip("the control needs root; the world-readable file row covers the read boundary unprivileged")
				}
				ctl := exec.Command(bin, tt.probe...)
				ctl.Env = []string{llEnvProbe + "=1"}
				out, err := ctl.CombinedOutput()
				require.NoError(t, err, "control (confined child, no sandbox) must succeed: %s", out)

				res, inside := autoRun(t, r, Spec{
					Argv:     append([]string{bin}, tt.probe...),
					Env:      map[string]string{llEnvProbe: "1"},
					ReadOnly: []string{filepath.Dir(bin)},
				})
				require.Equal(t, layersLandlockOnly.String(), res.InForce)
				require.Equal(t, llExitDenied, res.ExitCode, "must be denied inside: %s", inside)
				require.True(t, containsAny(inside, tt.denied), "denied for the wrong reason: %s", inside)
			})
		}
	})

	t.Run("probe", func(t *testing.T) {
		rep := Probe(context.Background(), Config{ScratchRoot: llTempDir(t, 0o711), UIDBase: 1_900_100_620, UIDCount: 4})
		var out bytes.Buffer
		_, err := rep.WriteTo(&out)
		require.NoError(t, err)
		require.Equal(t, []Isolation{IsolationLandlock}, rep.Modes, out.String())
		byName := checksByName(rep.Checks)
		require.False(t, byName["namespace mode"].OK, out.String())
		require.Contains(t, byName["namespace mode"].Fix, "seccomp")
		require.Equal(t, layersLandlockOnly.String(), byName["isolation auto"].Detail)
	})
}

// TestAutoRefusesWithoutNamespacesOrLandlock: with Landlock missing too,
// auto refuses with ErrUnavailable and runs nothing; the same run works
// unconfined (the control).
func TestAutoRefusesWithoutNamespacesOrLandlock(t *testing.T) {
	echo := Spec{Argv: []string{"/bin/echo", "ran"}}
	if !inContainerChild(t) {
		// Control: the run works unconfined, with both layers available.
		llRequire(t, landlockMinABIDefault)
		sandboxtest.RequireUserNS(t)
		res, out := autoRun(t, autoRunner(t, 1_900_100_700, 0), echo)
		require.Equal(t, 0, res.ExitCode, out)
		require.Equal(t, "ran\n", out)
		runInContainerChild(t, sandboxtest.ContainerNoNamespacesNoLandlock)
		return
	}
	requireNamespacesRefused(t)
	abi := landlockABI()
	require.Equal(t, 0, abi.Effective)
	require.ErrorIs(t, abi.Err, unix.ENOSYS)

	r := autoRunner(t, 1_900_100_700, 0)
	for _, iso := range []Isolation{IsolationAuto, IsolationLandlock, IsolationNamespace} {
		var out bytes.Buffer
		spec := echo
		spec.Isolation, spec.Stdout, spec.Stderr = iso, &out, &out
		res, err := r.Run(context.Background(), spec)
		require.ErrorIs(t, err, ErrUnavailable, "isolation %s", iso)
		require.Nil(t, res)
		require.Empty(t, out.String(), "isolation %s must not run the command", iso)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func checksByName(cs []Check) map[string]Check {
	m := make(map[string]Check, len(cs))
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}
