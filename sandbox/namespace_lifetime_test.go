package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// sleepMarker is a sleep argument unique to one test, to find its
// processes on the host.
func sleepMarker() string { return fmt.Sprintf("%d.%06d", 600+rand.IntN(300), rand.IntN(1_000_000)) }

// pidsWithArg lists host processes one of whose arguments is arg.
func pidsWithArg(t *testing.T, arg string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		// A whole argument, so "sh -c 'sleep M'" does not count as sleep.
		if bytes.Contains(append([]byte{0}, b...), []byte("\x00"+arg+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestDaemonsDieWithTheTask(t *testing.T) {
	r := nsRunner(t)
	m := sleepMarker()
	// A double-fork + setsid daemon.
	script := `(setsid sh -c 'sleep ` + m + ` </dev/null >/dev/null 2>&1 &' &) ; sleep 0.2; echo spawned`

	// Control: on the host the daemon survives its parent.
	_, out := runOut(t, sh(script)...)
	require.Equal(t, "spawned\n", out)
	host := pidsWithArg(t, m)
	require.NotEmpty(t, host, "control: the daemon outlives its parent on the host")
	for _, p := range host {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	require.Eventually(t, func() bool { return len(pidsWithArg(t, m)) == 0 }, 5*time.Second, 10*time.Millisecond)

	o := runIn(t, r, Spec{Argv: sh(script)})
	require.Equal(t, "spawned\n", o.stdout)
	require.Empty(t, pidsWithArg(t, m), "Run returns only after the pid namespace is empty")
}

func TestWallTimeoutKillsTheTree(t *testing.T) {
	r := nsRunner(t)
	m := sleepMarker()
	o := runIn(t, r, Spec{Argv: sh(`sleep ` + m + ` & sleep ` + m), Limits: Limits{Wall: 300 * time.Millisecond}})
	require.True(t, o.res.TimedOut)
	require.Equal(t, "SIGKILL", o.res.Signal)
	require.Empty(t, pidsWithArg(t, m))

	o = runIn(t, r, Spec{Argv: sh("true"), Limits: Limits{Wall: 10 * time.Second}})
	require.False(t, o.res.TimedOut, "control: a quick task does not time out")
}

func TestContextCancelKillsTheTree(t *testing.T) {
	r := nsRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncbuf.Buffer
	done := make(chan *Result, 1)
	go func() {
		res, err := r.Run(ctx, Spec{Argv: sh("echo started; exec sleep 600"), Stdout: &out})
		require.NoError(t, err)
		done <- res
	}()
	require.Eventually(t, func() bool { return out.String() == "started\n" }, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case res := <-done:
		require.Equal(t, "SIGKILL", res.Signal)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestWorkerSIGKILLTakesItsSandboxesDown(t *testing.T) {
	r := nsRunner(t)
	m := sleepMarker()
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold",
		"WARREN_SANDBOX_TEST_ROOT="+r.cfg.ScratchRoot,
		"WARREN_SANDBOX_TEST_SCRIPT=(setsid sleep "+m+" &); exec sleep "+m)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Control: while the worker lives, its sandbox does.
	require.Eventually(t, func() bool { return len(pidsWithArg(t, m)) == 2 }, 20*time.Second, 10*time.Millisecond, stderr.String())
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return len(pidsWithArg(t, m)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"every process of the sandbox is gone within 5 s of the worker's SIGKILL")
}

func TestSetupFailureNeverRunsTheCommand(t *testing.T) {
	r := nsRunner(t)
	scratch := hostDir(t)
	marker := filepath.Join(scratch, "ran")
	run := func(spec Spec) error {
		spec.Scratch = scratch
		_, err := r.Run(context.Background(), spec)
		return err
	}
	// Control: with a valid setup the command runs.
	require.NoError(t, run(Spec{Argv: sh("touch $HOME/ran")}))
	require.FileExists(t, marker)
	require.NoError(t, os.Remove(marker))

	for _, tc := range []struct {
		name, step string
		spec       Spec
		errno      error
	}{
		{"tmpfs refuses the /tmp size", "mount /tmp", Spec{Limits: Limits{TmpSize: -1}}, unix.EINVAL},
		{"read-only path gone", "resolve read-only path", Spec{ReadOnly: []string{"/nonexistent/toolchain"}}, os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if spec.Argv == nil {
				spec.Argv = sh("touch $HOME/ran")
			}
			err := run(spec)
			var se *SetupError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.step, se.Step, err.Error())
			if tc.errno != nil {
				require.ErrorIs(t, err, tc.errno)
			}
			require.NoFileExists(t, marker, "the command must not run")
		})
	}
}

func TestNothingIsLeftBehind(t *testing.T) {
	r := nsRunner(t)
	m := sleepMarker()
	o := runIn(t, r, Spec{Argv: sh(`echo $HOME; mkdir $HOME/d; echo x > $HOME/d/f; chmod 0 $HOME/d; (setsid sleep ` + m + ` &)`)})
	scratch := strings.TrimSpace(o.stdout)
	require.True(t, strings.HasPrefix(scratch, r.cfg.ScratchRoot), scratch)
	require.NoDirExists(t, scratch, "scratch removed")
	require.Empty(t, pidsWithArg(t, m), "no process left")
	mi, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	require.NotContains(t, string(mi), scratch, "no mount left on the host")
	if r.pool != nil {
		require.Empty(t, r.pool.Quarantined(), "teardown was verified")
	}
	if r.cgroups.Version != 0 {
		for _, parent := range r.cgroups.Parents() {
			ents, err := os.ReadDir(parent)
			require.NoError(t, err)
			for _, e := range ents {
				require.False(t, strings.Contains(e.Name(), filepath.Base(scratch)), "cgroup %s left", e.Name())
			}
		}
	}
}

// TestNamespaceModeWorksWheneverTheKernelAllows makes a broken launcher a
// failure rather than a sea of skips.
func TestNamespaceModeWorksWheneverTheKernelAllows(t *testing.T) {
	r := nsRunner(t) // skips (or fails in CI) only if unshare -Urm fails
	for _, iso := range []Isolation{IsolationNamespace, IsolationAuto} {
		res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Isolation: iso})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		require.Equal(t, "namespace", res.InForce, "the layer is off in this runner, and InForce says so")
	}
}

// TestNamespaceModeWithTheLandlockLayer runs the production configuration:
// the namespace view with the Landlock layer on top when the kernel's ABI
// meets the floor, and says exactly that in InForce.
func TestNamespaceModeWithTheLandlockLayer(t *testing.T) {
	r := nsRunner(t)
	r.noLayer.Store(false)
	want := "namespace"
	if landlockABI().require(r.cfg.LandlockMinABI) == nil {
		want = layersLayered.String()
	}
	o := runIn(t, r, Spec{Argv: sh(`echo ok > $HOME/f && cat $HOME/f && echo t > /tmp/t && cat /tmp/t && test ! -e /root && echo isolated`)})
	require.Equal(t, "ok\nt\nisolated\n", o.stdout, o.stderr)
	require.Equal(t, want, o.res.InForce)
}

func TestExitStatusAndSignalAreReported(t *testing.T) {
	r := nsRunner(t)
	o := runIn(t, r, Spec{Argv: sh("exit 7")})
	require.Equal(t, 7, o.res.ExitCode)
	o = runIn(t, r, Spec{Argv: sh("echo out; echo err >&2; kill -TERM $$; sleep 0.3")})
	require.Equal(t, "out\n", o.stdout)
	require.Equal(t, "err\n", o.stderr)
	// pid 1 ignores signals from inside without a handler: sh survives the
	// TERM and exits after the sleep.
	require.Equal(t, 0, o.res.ExitCode)
	o = runIn(t, r, Spec{Argv: sh("cat"), Stdin: strings.NewReader("piped\n")})
	require.Equal(t, "piped\n", o.stdout)
}

// TestPrestartedInitsRunLikeColdOnes runs the warm path (Config.Prestart)
// through the properties that depend on how the init was started: identity
// and view, stdio, exit status, setup failure, timeout, cleanup.
func TestPrestartedInitsRunLikeColdOnes(t *testing.T) {
	cold := nsRunner(t)
	r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: cold.cfg.ScratchRoot, Prestart: 2})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	r.noLayer.Store(true)
	probe := sh(`cat; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; test ! -e /root && echo isolated; echo $$; echo err >&2; exit 3`)
	for i := range 4 {
		o := runIn(t, r, Spec{Argv: probe, Stdin: strings.NewReader(fmt.Sprintf("in%d\n", i))})
		require.Equal(t, fmt.Sprintf("in%d\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nisolated\n1\n", i), o.stdout)
		require.Equal(t, "err\n", o.stderr)
		require.Equal(t, 3, o.res.ExitCode)
	}
	require.Eventually(t, func() bool { return r.warm.ready(namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})) == 2 }, 20*time.Second, 5*time.Millisecond, "the pool refills")

	scratch := hostDir(t)
	_, err = r.Run(context.Background(), Spec{Argv: sh("touch $HOME/ran"), Scratch: scratch, Limits: Limits{TmpSize: -1}})
	var se *SetupError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "mount /tmp", se.Step)
	require.NoFileExists(t, filepath.Join(scratch, "ran"))

	m := sleepMarker()
	o := runIn(t, r, Spec{Argv: sh(`(setsid sleep ` + m + ` &); sleep ` + m), Limits: Limits{Wall: 300 * time.Millisecond}})
	require.True(t, o.res.TimedOut)
	require.Empty(t, pidsWithArg(t, m))
	if r.pool != nil {
		require.Empty(t, r.pool.Quarantined())
	}
}
