package sandbox

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// benchAlternate runs a and b alternately b.N times each (so both see the
// same machine state) and reports their mean times and b's ratio to a.
func benchAlternate(b *testing.B, nameA, nameB string, a, bb func() error) {
	b.Helper()
	var ta, tb time.Duration
	for b.Loop() {
		s := time.Now()
		require.NoError(b, a())
		m := time.Now()
		require.NoError(b, bb())
		tb += time.Since(m)
		ta += m.Sub(s)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ta.Microseconds())/n, nameA+"-us/op")
	b.ReportMetric(float64(tb.Microseconds())/n, nameB+"-us/op")
	b.ReportMetric(float64(tb)/float64(ta), nameB+"/"+nameA)
}

func benchRunner(b *testing.B, minABI int) *Runner {
	b.Helper()
	r, err := startedNew(Config{ScratchRoot: sandboxtest.ScratchRoot(b), LandlockMinABI: minABI, UIDBase: 1_900_100_600, UIDCount: 64})
	require.NoError(b, err)
	return r
}

// BenchmarkLandlockStart: start + exit of /bin/true in the Landlock mode
// (home, uid, init re-exec, Landlock, seccomp, teardown) against a plain
// fork/exec, in one run. Goal: ratio landlock/plain < 2.
func BenchmarkLandlockStart(b *testing.B) {
	if landlockABI().require(landlockMinABIDefault) != nil {
		b.Skip("Landlock ABI below the default floor")
	}
	r := benchRunner(b, 0)
	spec := Spec{Argv: []string{"/bin/true"}, Limits: DefaultLimits}
	ctx := context.Background()
	benchAlternate(b, "plain", "landlock",
		func() error { return exec.Command("/bin/true").Run() },
		func() error {
			res, err := r.runIsolated(ctx, landlockMode{}, spec)
			if err == nil && res.ExitCode != 0 {
				b.Fatalf("exit %d", res.ExitCode)
			}
			return err
		})
}

// BenchmarkLandlockWarmStart: as BenchmarkLandlockStart with a warm
// sandbox (Config.Prestart 1: pool uid, home, cgroup and init ready before
// the run). The loop waits for the refill after each warm run, outside
// both timings, and reports that wait. Goal: ratio landlock/plain < 2.
func BenchmarkLandlockWarmStart(b *testing.B) {
	if landlockABI().require(landlockMinABIDefault) != nil {
		b.Skip("Landlock ABI below the default floor")
	}
	r, err := startedNew(Config{Isolation: IsolationLandlock, ScratchRoot: sandboxtest.ScratchRoot(b), UIDBase: 1_900_100_800, UIDCount: 64, Prestart: 1})
	require.NoError(b, err)
	b.Cleanup(func() { _ = r.Close() })
	spec := Spec{Argv: []string{"/bin/true"}, Limits: DefaultLimits}
	k := landlockMode{}.warmKey(spec)
	ctx := context.Background()
	var plain, warm, refill time.Duration
	for b.Loop() {
		tr := time.Now()
		for r.warm.ready(k) < 1 {
			time.Sleep(100 * time.Microsecond)
		}
		refill += time.Since(tr)
		t0 := time.Now()
		require.NoError(b, exec.Command("/bin/true").Run())
		t1 := time.Now()
		res, err := r.Run(ctx, spec)
		require.NoError(b, err)
		require.Equal(b, 0, res.ExitCode)
		warm += time.Since(t1)
		plain += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plain.Microseconds())/n, "plain-us/op")
	b.ReportMetric(float64(warm.Microseconds())/n, "warm-us/op")
	b.ReportMetric(float64(warm)/float64(plain), "warm/plain")
	b.ReportMetric(float64(refill.Microseconds())/n, "refill-wait-us/op")
}

// BenchmarkLayeredStart: the namespace mode with the Landlock layer against
// the namespace mode alone (the layer turned off by a floor above the
// host's ABI). Goal: ratio layered/namespace < 1.10.
func BenchmarkLayeredStart(b *testing.B) {
	if landlockABI().require(landlockMinABIDefault) != nil {
		b.Skip("Landlock ABI below the default floor")
	}
	layered := benchRunner(b, 0)
	nsOnly := benchRunner(b, len(landlockABIFeatures)-1)
	spec := Spec{Argv: []string{"/bin/true"}, Limits: DefaultLimits}
	ctx := context.Background()
	res, err := layered.runIsolated(ctx, namespaceMode{}, spec)
	if err != nil {
		b.Skipf("namespace mode unavailable: %v", err)
	}
	if !strings.Contains(res.InForce, "landlock") {
		b.Skipf("the namespace mode does not apply the Landlock layer yet (InForce %q)", res.InForce)
	}
	run := func(r *Runner) func() error {
		return func() error {
			_, err := r.runIsolated(ctx, namespaceMode{}, spec)
			return err
		}
	}
	benchAlternate(b, "namespace", "layered", run(nsOnly), run(layered))
}
