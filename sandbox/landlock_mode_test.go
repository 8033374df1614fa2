package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"github.com/warrenhq/warren/sandbox/internal/ident"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// llRunner is a Runner for the Landlock-mode tests; as root its uid pool
// is private to the test (a range of its own).
func llRunner(t *testing.T, base uint32) *Runner {
	t.Helper()
	r, err := startedNew(Config{ScratchRoot: llTempDir(t, 0o711), UIDBase: base, UIDCount: 4})
	require.NoError(t, err)
	r.setupHost()
	if r.pool != nil {
		// A pool of the test's own (a quarantine never carries over to the
		// next test), leased host-wide like every production pool: other
		// test processes (another package's suite, another copy of this
		// one) running sandboxes as root at the same time must never get
		// the same uid, or one's uid sweep kills the other's task.
		r.pool = ident.NewPool(base, 4, ident.LockDir)
	}
	return r
}

// exclusiveUIDs holds the range of uids at base for this test alone, for
// as long as it runs: another test process on the host (a second copy of
// the suite) running the same test waits. The uid leases keep concurrent
// runs apart, but a test that counts the free uids of its range must have
// all of them (a .ci/run beside another found none free).
func exclusiveUIDs(t *testing.T, base uint32) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("warren-test-uids-%d.lock", base)), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() }) // closing releases the lock
	require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
}

func llRunSpec(t *testing.T, r *Runner, spec Spec) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &out
	spec.Limits = spec.Limits.withDefaults(r.cfg.Defaults)
	res, err := r.runIsolated(context.Background(), landlockMode{}, spec)
	require.NoError(t, err, out.String())
	return res, out.String()
}

func TestLandlockModeRuns(t *testing.T) {
	llRequire(t, 6)
	r := llRunner(t, 1_900_100_000)
	res, out := llRunSpec(t, r, Spec{
		Argv: []string{"/bin/sh", "-c", `echo "$HOME|$TMPDIR|$(id -u)|$WARREN_SECRET|$FOO"; touch "$TMPDIR/x" && echo tmp-ok; cat /proc/self/status | grep NoNewPrivs`},
		Env:  map[string]string{"FOO": "bar"},
	})
	require.Equal(t, 0, res.ExitCode, out)
	require.Equal(t, layersLandlockOnly.String(), res.InForce)
	fields := strings.Split(strings.SplitN(out, "\n", 2)[0], "|")
	require.Len(t, fields, 5, out)
	require.True(t, strings.HasPrefix(fields[0], r.cfg.ScratchRoot+"/"), out)
	require.Equal(t, fields[0]+"/.tmp", fields[1])
	if os.Geteuid() == 0 {
		uid, _ := strconv.Atoi(fields[2])
		require.GreaterOrEqual(t, uid, 1_900_100_000, "root runs get a pool uid")
	} else {
		require.Equal(t, strconv.Itoa(os.Getuid()), fields[2])
	}
	require.Empty(t, fields[3], "the worker's environment must not leak")
	require.Equal(t, "bar", fields[4])
	require.Contains(t, out, "tmp-ok")
	require.Contains(t, out, "NoNewPrivs:\t1")
	require.NoDirExists(t, fields[0], "the home is removed at teardown")
}

func TestLandlockModeRefusesBelowMinABI(t *testing.T) {
	llRequire(t, 1)
	r := llRunner(t, 1_900_100_100)
	r.cfg.LandlockMinABI = landlockABI().Effective + 1
	marker := llTempDir(t, 0o777) + "/ran"
	_, err := r.runIsolated(context.Background(), landlockMode{}, Spec{Argv: []string{"/bin/touch", marker}, Limits: DefaultLimits})
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "LandlockMinABI")
	require.NoFileExists(t, marker)
}

// TestLandlockModeSweepsSetsidEscapee: a daemon that left the process
// group with setsid survives a group kill (the control) but not the run's
// sweep, by its cgroup (the default as root) or by its uid (no cgroup);
// the uid then returns to the pool.
func TestLandlockModeSweepsSetsidEscapee(t *testing.T) {
	llRequire(t, 6)
	if os.Geteuid() != 0 {
		t.Skip("the uid sweep needs dedicated uids (root); an ordinary-user worker cannot tell its sandboxes' processes from its own (documented)")
	}
	// Control: the same escape outside a sandbox survives the group kill.
	// The shell waits until the daemon has left the group (it writes the
	// marker after setsid), so the group kill cannot win the race.
	const escape = `setsid sh -c 'echo $$ > "$HOME/esc"; exec sleep 600' </dev/null >/dev/null 2>&1 & while [ ! -s "$HOME/esc" ]; do :; done; `
	ctlHome := llTempDir(t, 0o700)
	ctl := exec.Command("/bin/sh", "-c", escape+`cat "$HOME/esc"`)
	ctl.Env = []string{"HOME=" + ctlHome}
	ctl.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outb, err := ctl.Output()
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(outb)))
	require.NoError(t, err)
	_ = syscall.Kill(-ctl.Process.Pid, syscall.SIGKILL)
	require.NoError(t, syscall.Kill(pid, 0), "control: the escapee outlives its group")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	for _, tc := range []struct {
		name     string
		cgroups  bool // else the uid sweep alone must catch it
		uidStart uint32
	}{
		{"cgroup sweep", true, 1_900_100_200},
		{"uid sweep", false, 1_900_100_250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := llRunner(t, tc.uidStart)
			if !tc.cgroups {
				r.cgroups = cgroup.Support{}
			} else if r.cgroups.Version == 0 {
				if sandboxtest.InCI() {
					t.Fatal("no usable cgroup hierarchy as root in CI")
				}
				t.Skip("no usable cgroup hierarchy here: the uid-sweep case covers the sweep")
			}
			res, out := llRunSpec(t, r, Spec{Argv: []string{"/bin/sh", "-c", escape + "id -u"}})
			require.Equal(t, 0, res.ExitCode, out)
			require.Equal(t, tc.cgroups, strings.HasPrefix(res.ResourceLimits, "cgroup"), res.ResourceLimits)
			uid, err := strconv.Atoi(strings.TrimSpace(out))
			require.NoError(t, err, out)
			pids, err := ident.LivePIDs(uint32(uid))
			require.NoError(t, err)
			require.Empty(t, pids, "the escapee must be swept")
			require.Empty(t, r.pool.Quarantined())
		})
	}
}

// TestLandlockModeQuarantinesUnverifiedUID: a uid whose teardown cannot be
// verified (its home cannot be removed: an immutable file, the control
// shows plain removal fails) is never handed out again; a verified one is.
func TestLandlockModeQuarantinesUnverifiedUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("dedicated uids need root")
	}
	exclusiveUIDs(t, 1_900_100_300) // the test counts every uid of its range
	r := llRunner(t, 1_900_100_300)
	stuck, err := r.pool.Acquire()
	require.NoError(t, err)
	clean, err := r.pool.Acquire()
	require.NoError(t, err)

	home := llTempDir(t, 0o700) + "/home"
	require.NoError(t, os.Mkdir(home, 0o700))
	pinned := home + "/pinned"
	require.NoError(t, os.WriteFile(pinned, nil, 0o600))
	if out, err := exec.Command("chattr", "+i", pinned).CombinedOutput(); err != nil {
		t.Skipf("chattr +i unsupported on this filesystem: %s", out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", pinned).Run() })
	require.Error(t, os.Remove(pinned), "control: the pinned file resists removal")

	require.Error(t, r.landlockTeardown(scratchDir{path: home, owned: true}, stuck, nil), "an unremovable home must fail the teardown check")
	require.NoError(t, r.landlockTeardown(scratchDir{}, clean, nil))
	require.Contains(t, r.pool.Quarantined(), stuck)
	seen := map[uint32]bool{}
	for range 4 {
		u, err := r.pool.Acquire()
		if err != nil {
			require.ErrorIs(t, err, ErrUIDPoolExhausted)
			break
		}
		seen[u] = true
	}
	require.False(t, seen[stuck], "a quarantined uid must not be reused")
	require.True(t, seen[clean], "a verified uid is reused")
	require.Len(t, seen, 3, fmt.Sprint(seen))
}

func TestProbeLandlock(t *testing.T) {
	llRequire(t, 6)
	root := llTempDir(t, 0o711)
	checks, works := probeLandlock(context.Background(), Config{ScratchRoot: root, UIDBase: 1_900_100_500, UIDCount: 4}, true)
	require.True(t, works, fmt.Sprint(checks))
	byName := map[string]Check{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	require.Contains(t, byName["landlock mode"].Detail, layersLandlockOnly.String())
	require.Equal(t, layersLayered.String(), byName["isolation auto"].Detail)

	// A floor above the host's ABI: refused, and the fix says how to lower it.
	checks, works = probeLandlock(context.Background(), Config{ScratchRoot: root, UIDBase: 1_900_100_500, UIDCount: 4, LandlockMinABI: landlockABI().Effective + 1}, false)
	require.False(t, works)
	require.Contains(t, checks[0].Fix, "LandlockMinABI")
}

// TestLayeredLandlockInForce: in the namespace mode the Landlock layer is
// applied inside the new root. Writing the task's own /proc/self/comm
// works with namespaces alone (the control: the layer disabled by a floor
// above the host ABI) and is denied with the layer, which gives /proc
// read-only rights.
func TestLayeredLandlockInForce(t *testing.T) {
	llRequire(t, 6)
	sandboxtest.RequireUserNS(t)
	root := llTempDir(t, 0o711)
	probe := Spec{
		Argv:      []string{"/usr/bin/python3", "-c", "open('/proc/self/comm', 'w').write('probe')"},
		Isolation: IsolationNamespace,
	}
	run := func(minABI int) (*Result, string) {
		// A range of its own: the shared default pool belongs to other tests.
		r, err := startedNew(Config{ScratchRoot: root, LandlockMinABI: minABI, UIDBase: 1_900_100_400, UIDCount: 4})
		require.NoError(t, err)
		var out bytes.Buffer
		spec := probe
		spec.Stdout, spec.Stderr = &out, &out
		res, err := r.Run(context.Background(), spec)
		require.NoError(t, err, out.String())
		return res, out.String()
	}
	res, out := run(len(landlockABIFeatures) - 1)
	require.Equal(t, "namespace", res.InForce)
	require.Equal(t, 0, res.ExitCode, "control: the write works in the namespace alone: %s", out)

	res, out = run(0)
	require.Equal(t, layersLayered.String(), res.InForce)
	require.NotEqual(t, 0, res.ExitCode, "the Landlock layer must deny the write")
	require.Contains(t, out, "PermissionError", out)
}
