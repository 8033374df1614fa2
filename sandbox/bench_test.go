package sandbox

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// bwrapArgs gives bwrap the same view as namespace mode: ro /usr with the
// /bin /lib /lib64 /sbin links, the same /etc files, the five devices,
// private /dev/shm and noexec /tmp, a fresh /proc, one rw scratch, all
// namespaces, its own session, dying with its parent.
func bwrapArgs(scratch string) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
		"--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", scratch, "--setenv", "TMPDIR", "/tmp",
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin"}
	for _, f := range systemEtc {
		if _, err := os.Stat("/etc/" + f); err == nil {
			args = append(args, "--ro-bind", "/etc/"+f, "/etc/"+f)
		}
	}
	for _, d := range viewDevices {
		args = append(args, "--dev-bind", d, d)
	}
	args = append(args, "--tmpfs", "/dev/shm", "--tmpfs", "/tmp", "--proc", "/proc",
		"--bind", scratch, scratch, "--chdir", scratch, "--remount-ro", "/", "/bin/true")
	return args
}

// BenchmarkSandboxStart times start+exit of /bin/true three ways,
// interleaved in one loop so load changes hit all alike: plain fork/exec,
// a full namespace-mode Run (including scratch and cgroup setup and
// teardown), and bwrap with an equivalent view. It reports each as ms/op
// and the ratios namespace/bwrap (goal < 1) and namespace/plain (goal < 3).
func BenchmarkSandboxStart(b *testing.B) {
	sandboxtest.RequireUserNS(b)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap not installed (apt-get install bubblewrap): no baseline to compare with")
	}
	root, err := os.MkdirTemp("", "warren-bench-")
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(root) })
	require.NoError(b, os.Chmod(root, 0o711))
	r, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: root})
	require.NoError(b, err)
	scratch, err := os.MkdirTemp(root, "bwrap-")
	require.NoError(b, err)
	bargs := bwrapArgs(scratch)
	ctx := context.Background()
	spec := Spec{Argv: []string{"/bin/true"}}
	// Warm up each path once (page cache, cgroup detection).
	_, err = r.Run(ctx, spec)
	require.NoError(b, err)
	require.NoError(b, exec.Command(bwrap, bargs...).Run())

	var plain, ns, bw time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		res, err := r.Run(ctx, spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		t2 := time.Now()
		if out, err := exec.Command(bwrap, bargs...).CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
		t3 := time.Now()
		plain += t1.Sub(t0)
		ns += t2.Sub(t1)
		bw += t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(plain.Microseconds())/1000/n, "plain-ms/op")
	b.ReportMetric(float64(ns.Microseconds())/1000/n, "namespace-ms/op")
	b.ReportMetric(float64(bw.Microseconds())/1000/n, "bwrap-ms/op")
	b.ReportMetric(float64(ns)/float64(bw), "namespace/bwrap")
	b.ReportMetric(float64(ns)/float64(plain), "namespace/plain")
}
