package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
)

// BenchmarkExecLatency times one `warren exec -- /usr/bin/true` against a
// running `warren up --capacity 2` (the real binaries, built for the run,
// the production sandbox) and, alternating in the same loop, bwrap running
// the same command directly (--unshare-all, ro /usr, fresh /proc, /dev,
// tmpfs /tmp and /dev/shm, rw scratch), `warren --help` (the CLI's start
// and exit alone) and plain fork/exec. It reports the medians and
// exec/bwrap (issue 14's goal: <= 2). A pause before each exec, outside
// the timings, lets the host go idle, as a one-off command finds it.
func BenchmarkExecLatency(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap is not installed (the baseline): apt-get install bubblewrap")
	}
	warren, env := buildWarren(b)
	port := brokertest.FreePorts(b, 1)[0]
	startProcess(b, withEnv(exec.Command(warren, "up", "--capacity", "2", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--cluster-listen", "127.0.0.1:0"), env), "worker ready")

	scratch := b.TempDir()
	bwrapArgs := []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp", "--proc", "/proc", "--bind", scratch, scratch, "--chdir", scratch,
		"--remount-ro", "/", "/usr/bin/true"}
	variants := []cliVariant{
		{name: "exec", cmd: func() *exec.Cmd { return withEnv(exec.Command(warren, "exec", "--", "/usr/bin/true"), env) }},
		{name: "bwrap", cmd: func() *exec.Cmd { return exec.Command(bwrap, bwrapArgs...) }},
		{name: "cli", cmd: func() *exec.Cmd { return withEnv(exec.Command(warren, "--help"), env) }},
		{name: "plain", cmd: func() *exec.Cmd { return exec.Command("/usr/bin/true") }},
	}
	// Warm: the first exec pays the page cache and the first pulls.
	for range 3 {
		require.NoError(b, variants[0].cmd().Run())
	}
	// The host idles between one-off commands.
	times := timeAlternated(b, variants, 100*time.Millisecond)
	med := reportMedians(b, variants, times)
	b.ReportMetric(float64(percentile(times[0], 0.9).Microseconds())/1000, "exec_p90_ms")
	b.ReportMetric(float64(med[0])/float64(med[1]), "exec/bwrap")
	b.Logf("medians over %d rounds: exec %s (p90 %s), bwrap %s, warren --help %s, plain %s; exec/bwrap %.2f",
		len(times[0]), med[0], percentile(times[0], 0.9), med[1], med[2], med[3], float64(med[0])/float64(med[1]))
}

// A cliVariant is one command a latency benchmark times: cmd makes it
// afresh for each run, exit is the status it must end with.
type cliVariant struct {
	name string
	cmd  func() *exec.Cmd
	exit int
}

// timeAlternated runs every variant once per b.Loop round, rotating which
// goes first so that a change of the machine's load falls on all alike,
// each after pause (outside its timing), and returns each variant's wall
// times, in variants' order. A run that ends otherwise than its variant's
// exit status fails the benchmark with its output.
func timeAlternated(b *testing.B, variants []cliVariant, pause time.Duration) [][]time.Duration {
	times := make([][]time.Duration, len(variants))
	for round := 0; b.Loop(); round++ {
		for k := range variants {
			i := (k + round) % len(variants)
			cmd := variants[i].cmd()
			time.Sleep(pause)
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			times[i] = append(times[i], time.Since(t0))
			code := 0
			if err != nil {
				var ee *exec.ExitError
				require.ErrorAs(b, err, &ee, "%s: %s", variants[i].name, out)
				code = ee.ExitCode()
			}
			require.Equal(b, variants[i].exit, code, "%s exited %d: %s", variants[i].name, code, out)
		}
	}
	return times
}

// reportMedians reports each variant's median wall time as NAME_ms and
// returns the medians, in variants' order.
func reportMedians(b *testing.B, variants []cliVariant, times [][]time.Duration) []time.Duration {
	med := make([]time.Duration, len(variants))
	for i, v := range variants {
		med[i] = percentile(times[i], 0.5)
		b.ReportMetric(float64(med[i].Microseconds())/1000, v.name+"_ms")
	}
	return med
}

func withEnv(c *exec.Cmd, env []string) *exec.Cmd {
	c.Env = env
	return c
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// buildWarren builds the binaries as make build does, side by side: warren
// (the client build, -tags client), warren-host (the full build, which
// warren execs for up, broker, worker, doctor and the embedded fallback),
// warren-sandbox-init and warren-sandbox-agent (where the worker and
// `warren sandbox run` look for them); and the environment to run them
// with: a data dir of their own, warnings only.
func buildWarren(tb testing.TB) (string, []string) {
	dir := tb.TempDir()
	require.NoError(tb, os.Chmod(dir, 0o755))
	warren := filepath.Join(dir, "warren")
	for _, build := range [][]string{
		{"build", "-tags", "client", "-o", warren, "github.com/warrenhq/warren/cmd/warren"},
		{"build", "-o", filepath.Join(dir, "warren-host"), "github.com/warrenhq/warren/cmd/warren"},
		{"build", "-o", filepath.Join(dir, "warren-sandbox-init"), "github.com/warrenhq/warren/cmd/warren-sandbox-init"},
		{"build", "-o", filepath.Join(dir, "warren-sandbox-agent"), "github.com/warrenhq/warren/cmd/warren-sandbox-agent"},
	} {
		cmd := exec.Command("go", build...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		require.NoError(tb, err, "go %s: %s", strings.Join(build, " "), out)
	}
	return warren, append(os.Environ(), "WARREN_DATA_DIR="+filepath.Join(dir, "data"), "WARREN_LOG_LEVEL=warn")
}

// startProcess runs cmd until the benchmark ends (then SIGTERM) and waits
// until its stderr shows ready.
func startProcess(b testing.TB, cmd *exec.Cmd, ready string) *exec.Cmd {
	stderr, err := cmd.StderrPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	seen := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), ready) {
				close(seen)
				break
			}
		}
		for sc.Scan() { // keep the pipe drained
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case <-seen:
	case <-ctx.Done():
		b.Fatalf("%s did not print %q within a minute", strings.Join(cmd.Args, " "), ready)
	}
	return cmd
}
