package sandbox

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// isolationCase runs a Spec through one isolation mode of the Runner, the
// whole way (init, Landlock, seccomp, teardown), and names the layers it
// must report in force.
type isolationCase struct {
	name    string
	inForce string
	run     func(t *testing.T, spec Spec) probeOut
}

// hardenedModes are the modes whose seccomp filter the Landlock-only
// hardening extends: Landlock-only and layered.
func hardenedModes(t *testing.T) []isolationCase {
	t.Helper()
	return []isolationCase{
		{name: "landlock", inForce: inForceLandlock, run: func(t *testing.T, spec Spec) probeOut {
			llRequire(t, 6)
			return runLandlockOut(t, llRunner(t, 1_900_100_400), spec)
		}},
		{name: "layered", inForce: "namespace" + inForceLayer, run: func(t *testing.T, spec Spec) probeOut {
			llRequire(t, 6)
			r := nsRunner(t)
			r.ns.noLayer.Store(false)
			return runIn(t, r, spec)
		}},
	}
}

// runLandlockOut is runIn for the Landlock-only mode.
func runLandlockOut(t *testing.T, r *Runner, spec Spec) probeOut {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	if spec.Limits.Wall == 0 {
		spec.Limits.Wall = 30 * time.Second
	}
	spec.Limits = spec.Limits.withDefaults(r.cfg.Defaults)
	res, err := r.runLandlock(context.Background(), spec)
	require.NoError(t, err, "stderr: %s", errb.String())
	return probeOut{res: res, stdout: out.String(), stderr: errb.String()}
}

// cloneNewUser is a python3 program that clone(2)s with CLONE_NEWUSER
// (fork-like: the child exits at once) and prints clone-ok when that
// worked.
const cloneNewUser = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER|SIGCHLD)
if pid == 0:
    os._exit(0)
if pid < 0:
    raise SystemExit("clone: " + os.strerror(ctypes.get_errno()))
os.waitpid(pid, 0)
print("clone-ok")
`

// TestUserNamespacesRefused: creating a user namespace works on the host
// (the control) and is refused inside, by unshare(2) and by clone(2), in
// every mode: by seccomp (EPERM) in the Landlock-only and layered modes,
// by user.max_user_namespaces=0 in namespace mode alone (also
// TestNestedUserNamespacesAreRefused).
func TestUserNamespacesRefused(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	probes := []struct {
		name, ok string
		argv     []string
	}{
		{"unshare -U", "nested-ok", sh("unshare --user --map-current-user true && echo nested-ok")},
		{"clone CLONE_NEWUSER", "clone-ok", py(cloneNewUser)},
	}
	modes := append(hardenedModes(t), isolationCase{name: "namespace", inForce: "namespace", run: func(t *testing.T, spec Spec) probeOut {
		return runIn(t, nsRunner(t), spec)
	}})
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			_, out := runOut(t, p.argv...)
			require.Contains(t, out, p.ok, "control: the worker's user may create user namespaces")
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					o := m.run(t, Spec{Argv: p.argv})
					require.Equal(t, m.inForce, o.res.InForce)
					require.NotContains(t, o.stdout, p.ok, o.stderr)
					require.NotEqual(t, 0, o.res.ExitCode, o.stderr)
					want := "Operation not permitted"
					if m.name == "namespace" {
						want = "No space left on device"
					}
					require.Contains(t, o.stderr, want)
				})
			}
		})
	}
}
