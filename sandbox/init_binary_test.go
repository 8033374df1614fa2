package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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
				require.Eventually(t, func() bool { return r.warm.ready(namespaceMode{}.warmKey(spec)) == 1 }, 20*time.Second, 5*time.Millisecond)
			}
			o := runIn(t, r, Spec{Argv: []string{"python3", "-c", probe}})
			require.Equal(t, "9\n", o.stdout, o.stderr)
		})
	}
}

// TestTheInitStartsWhateverTheWorkersDescriptorNumbers: the init starts
// whichever number the worker's highest descriptor for the child has. Go's
// fork moves its error pipe just above a child's highest descriptor; when
// that was the number of the worker's descriptor on the init binary and the
// child exec'd /proc/self/fd/<that number>, it exec'd the pipe: "fork/exec
// /proc/self/fd/16: permission denied" (seen in CI as
// TestAutoFallsBackToLandlockWithoutNamespaces, where concurrent launches
// put a launch's highest descriptor at 15; a busy worker lands there at
// random). Here the binary is opened while the low numbers are taken, and
// a descriptor passed to the init takes, in turn, every free number up to
// past the binary's, the rest of the launch's below it.
func TestTheInitStartsWhateverTheWorkersDescriptorNumbers(t *testing.T) {
	if testInitPath == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI must run the suite with the dedicated init")
		}
		t.Skip("no dedicated init built (no Go toolchain)")
	}
	src, err := os.ReadFile(testInitPath)
	require.NoError(t, err)
	path := filepath.Join(llTempDir(t, 0o755), initBinaryName)
	require.NoError(t, os.WriteFile(path, src, 0o755))
	const high = 48
	held := holdFDsBelow(t, high)
	bin, err := openInit(path)
	for _, fd := range held {
		require.NoError(t, unix.Close(fd))
	}
	require.NoError(t, err)
	binFD := int(bin.file.Fd())
	require.GreaterOrEqual(t, binFD, high)

	tried := 0
	for n := 3; n <= binFD+4; n++ {
		fd, err := unix.FcntlInt(bin.file.Fd(), unix.F_DUPFD_CLOEXEC, n)
		require.NoError(t, err)
		if fd != n {
			require.NoError(t, unix.Close(fd)) // n is taken
			continue
		}
		tried++
		extra := os.NewFile(uintptr(fd), "extra")
		func() {
			runtime.LockOSThread() // Pdeathsig is the thread's (startInit)
			defer runtime.UnlockOSThread()
			s, err := startInitIn(bin, &syscall.SysProcAttr{}, nil, "", nil, nil, nil, extra)
			require.NoError(t, err, "the child's highest descriptor %d, the worker's on the init binary %d", n, binFD)
			s.kill(nil)
			s.close()
		}()
		require.NoError(t, extra.Close())
	}
	require.GreaterOrEqual(t, tried, high/2, "most numbers up to the binary's were free")
}

// holdFDsBelow opens /dev/null until a descriptor numbered n or more comes
// back (closed again), and returns those below n, for the caller to close.
func holdFDsBelow(t *testing.T, n int) []int {
	t.Helper()
	var held []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		if fd >= n {
			require.NoError(t, unix.Close(fd))
			return held
		}
		held = append(held, fd)
	}
}
