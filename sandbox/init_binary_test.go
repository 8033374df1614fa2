package sandbox

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInitViaProcSelfExe keeps the fallback path working: a Runner with
// no separate init binary re-executes its own binary (MaybeInit), in the
// namespace and the Landlock mode.
func TestInitViaProcSelfExe(t *testing.T) {
	base := nsRunner(t)
	cfg := base.cfg
	cfg.InitPath = selfExe
	r, err := startedNew(cfg)
	require.NoError(t, err)
	require.Equal(t, selfExe, r.init.exec)
	r.noLayer.Store(true)
	o := runIn(t, r, Spec{Argv: sh(`test ! -e /root && echo isolated; grep NoNewPrivs /proc/self/status; echo $$`)})
	require.Equal(t, "isolated\nNoNewPrivs:\t1\n1\n", o.stdout, o.stderr)
	if landlockABI().require(landlockMinABIDefault) != nil {
		return // the Landlock mode has its own ABI tests
	}
	res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/true"}, Isolation: IsolationLandlock})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, layersLandlockOnly.String(), res.InForce)
}

// TestDedicatedInitIsExecutedThroughItsDescriptor: a configured init is
// opened once and run as /proc/self/fd/N, so the sandbox uid needs no
// access to its directory; a missing one fails New with the step.
func TestDedicatedInitIsExecutedThroughItsDescriptor(t *testing.T) {
	if testInitPath == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI must run the suite with the dedicated init (no Go toolchain and no " + testInitEnv + ")")
		}
		t.Skip("no dedicated init built (no Go toolchain); the suite runs on /proc/self/exe")
	}
	r := nsRunner(t)
	require.Equal(t, testInitPath, r.cfg.InitPath)
	require.Regexp(t, `^/proc/self/fd/\d+$`, r.init.exec)
	o := runIn(t, r, Spec{Argv: sh(`echo ran`)})
	require.Equal(t, "ran\n", o.stdout)

	_, err := startedNew(Config{InitPath: "/nonexistent/warren-sandbox-init", ScratchRoot: r.cfg.ScratchRoot})
	var se *SetupError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "open sandbox init", se.Step)
}

// TestTaskKeepsParentDeathSignal: the task carries SIGKILL as its
// parent-death signal, so it dies with the worker even when the worker is
// SIGKILLed mid-run. The signal is per thread and is lost when the init's
// exec runs on a thread other than the one the clone armed (a Go init's
// main goroutine can be on any thread), so the init re-arms it right
// before exec. The init is run here off its main thread on purpose (the
// suite's TestMain), in both modes, cold and warm; the control is a plain
// child started without a parent-death signal, which reads 0.
func TestTaskKeepsParentDeathSignal(t *testing.T) {
	probe := `import ctypes; s = ctypes.c_int(-1); ctypes.CDLL(None).prctl(2, ctypes.byref(s), 0, 0, 0); print(s.value)`
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing in CI")
		}
		t.Skip("python3 (the probe's interpreter) is not installed")
	}
	out, err := exec.Command("python3", "-c", probe).Output()
	require.NoError(t, err)
	require.Equal(t, "0\n", string(out), "control: no parent-death signal outside")

	base := nsRunner(t)
	for _, tc := range []struct {
		name     string
		iso      Isolation
		prestart int
	}{
		{"namespace cold", IsolationNamespace, 0},
		{"namespace warm", IsolationNamespace, 1},
		{"landlock cold", IsolationLandlock, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.iso == IsolationLandlock && landlockABI().require(landlockMinABIDefault) != nil {
				if os.Getenv("CI") == "true" {
					t.Fatal("Landlock below the floor in CI")
				}
				t.Skip("Landlock below the floor on this kernel")
			}
			cfg := base.cfg
			cfg.InitPath, cfg.Isolation, cfg.Prestart = selfExe, tc.iso, tc.prestart
			r, err := startedNew(cfg)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			if tc.prestart > 0 {
				spec := Spec{Limits: Limits{}.withDefaults(r.cfg.Defaults)}
				require.Eventually(t, func() bool { return r.warmReady(namespaceMode{}.warmKey(spec)) == 1 }, 20*time.Second, 5*time.Millisecond)
			}
			o := runIn(t, r, Spec{Argv: []string{"python3", "-c", probe}})
			require.Equal(t, "9\n", o.stdout, o.stderr)
		})
	}
}
