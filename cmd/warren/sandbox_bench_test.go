package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// BenchmarkSandboxRunLatency times `warren sandbox run -- /usr/bin/true`
// (the client binary as make build builds it; a one-off command has no
// warm sandbox, so each run is cold) in namespace and in Landlock mode,
// and, alternating in the same loop, issue 14 point 3's baselines: bwrap
// running the same command with namespace mode's view (no /etc files) and
// plain fork/exec. Two floors are timed beside them, so that each run
// shows how much of the goals a launcher written in Go can reach:
// `goexec`, a static Go program that does nothing but exec the command
// (the Go runtime's start, before anything is isolated), and `parse`,
// `warren sandbox run` refused for want of a command (the client's start,
// its parse of the command line, the usage error and its exit). It
// reports the medians and ns/bwrap (goal <= 1), landlock/plain (goal
// <= 3), goexec/plain and parse/bwrap.
func BenchmarkSandboxRunLatency(b *testing.B) {
	sandboxtest.RequireUserNS(b)
	bwrap := sandboxtest.Bwrap(b)
	warren, env := buildWarren(b)
	goexec := buildGoExec(b)
	root := sandboxtest.ScratchRoot(b)
	scratch := b.TempDir()
	bwrapArgs := sandboxtest.BwrapArgs(scratch, nil, "/usr/bin/true")
	run := func(isolation string) func() *exec.Cmd {
		return func() *exec.Cmd {
			return withEnv(exec.Command(warren, "sandbox", "run", "--isolation", isolation, "--scratch-root", root, "--", "/usr/bin/true"), env)
		}
	}
	variants := []cliVariant{
		{name: "ns", cmd: run("namespace")},
		{name: "landlock", cmd: run("landlock")},
		{name: "bwrap", cmd: func() *exec.Cmd { return exec.Command(bwrap, bwrapArgs...) }},
		{name: "plain", cmd: func() *exec.Cmd { return exec.Command("/usr/bin/true") }},
		{name: "goexec", cmd: func() *exec.Cmd { return exec.Command(goexec, "/usr/bin/true") }},
		{name: "parse", cmd: func() *exec.Cmd { return withEnv(exec.Command(warren, "sandbox", "run"), env) }, exit: 1},
	}
	for _, v := range variants[:2] { // warm: the page cache, the cgroup hierarchy
		out, err := v.cmd().CombinedOutput()
		require.NoError(b, err, "%s: %s", v.name, out)
	}
	times := timeAlternated(b, variants, 50*time.Millisecond)
	med := reportMedians(b, variants, times)
	ratio := func(i, j int) float64 { return float64(med[i]) / float64(med[j]) }
	b.ReportMetric(ratio(0, 2), "ns/bwrap")
	b.ReportMetric(ratio(1, 3), "landlock/plain")
	b.ReportMetric(ratio(4, 3), "goexec/plain")
	b.ReportMetric(ratio(5, 2), "parse/bwrap")
	b.Logf("medians over %d rounds: namespace %s, Landlock %s, bwrap %s, plain %s, Go exec floor %s, client parse %s; ns/bwrap %.2f (goal <= 1), landlock/plain %.2f (goal <= 3), goexec/plain %.2f, parse/bwrap %.2f",
		len(times[0]), med[0], med[1], med[2], med[3], med[4], med[5], ratio(0, 2), ratio(1, 3), ratio(4, 3), ratio(5, 2))
}

// buildGoExec builds a static Go program that execs its arguments and
// does nothing else: the least a launcher written in Go costs.
func buildGoExec(tb testing.TB) string {
	dir := tb.TempDir()
	src := filepath.Join(dir, "main.go")
	require.NoError(tb, os.WriteFile(src, []byte(`package main

import (
	"os"
	"syscall"
)

func main() {
	err := syscall.Exec(os.Args[1], os.Args[1:], nil)
	println(err.Error())
	os.Exit(127)
}
`), 0o644))
	bin := filepath.Join(dir, "goexec")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(tb, err, "go build goexec: %s", out)
	return bin
}
