package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// bwrapArgs gives bwrap the same view as namespace mode, running /bin/true
// (sandboxtest.BwrapArgs with namespace mode's /etc files).
func bwrapArgs(scratch string) []string {
	return sandboxtest.BwrapArgs(scratch, etcAllowList(IsolationNamespace), "/bin/true")
}

// bwrapBench is the setup of a benchmark against bwrap: the bwrap binary
// (skipping without one), a scratch root sandbox uids can traverse, and
// bwrap's arguments with a scratch directory in it.
func bwrapBench(b *testing.B) (bwrap, root string, bargs []string) {
	sandboxtest.RequireUserNS(b)
	bwrap = sandboxtest.Bwrap(b)
	root = sandboxtest.ScratchRoot(b)
	scratch, err := os.MkdirTemp(root, "bwrap-")
	require.NoError(b, err)
	return bwrap, root, bwrapArgs(scratch)
}

// BenchmarkSandboxStart times start+exit of /bin/true five ways,
// interleaved in one loop so load changes hit all alike: plain fork/exec;
// a full Run in the production namespace configuration (with the Landlock
// layer when the kernel has it; scratch, cgroup, teardown included); the
// same without the Landlock layer; bwrap with an equivalent view; and the
// production configuration with one warm sandbox (Config.Prestart 1; the
// loop waits for the refill after each warm run, outside every timing,
// and reports that wait on its own). It reports
// each as ms/op and the ratios to bwrap (goal < 1) and to plain (goal < 3).
func BenchmarkSandboxStart(b *testing.B) {
	bwrap, root, bargs := bwrapBench(b)
	r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: root})
	require.NoError(b, err)
	rNS, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: root})
	require.NoError(b, err)
	rNS.noLayer.Store(true)
	rWarm, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: root, Prestart: 1})
	require.NoError(b, err)
	b.Cleanup(func() { _ = rWarm.Close() })
	ctx := context.Background()
	spec := Spec{Argv: []string{"/bin/true"}}
	// Warm up each path once (page cache, cgroup detection).
	res, err := r.Run(ctx, spec)
	require.NoError(b, err)
	b.Logf("production configuration: %s", res.InForce)
	_, err = rNS.Run(ctx, spec)
	require.NoError(b, err)
	_, err = rWarm.Run(ctx, spec)
	require.NoError(b, err)
	require.NoError(b, exec.Command(bwrap, bargs...).Run())

	warmSpec := Spec{Limits: rWarm.cfg.Defaults}
	for rWarm.warm.ready(namespaceMode{}.warmKey(warmSpec)) < 1 {
		time.Sleep(time.Millisecond)
	}
	var plain, full, ns, bw, warm, refill time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if res, err := r.Run(ctx, spec); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		t2 := time.Now()
		if res, err := rNS.Run(ctx, spec); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		t3 := time.Now()
		if out, err := exec.Command(bwrap, bargs...).CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
		t4 := time.Now()
		if res, err := rWarm.Run(ctx, spec); err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		t5 := time.Now()
		warm += t5.Sub(t4)
		// Let the pool refill before the next iteration, so its cost does
		// not land on the other variants' timings; reported on its own.
		for rWarm.warm.ready(namespaceMode{}.warmKey(warmSpec)) < 1 {
			time.Sleep(100 * time.Microsecond)
		}
		refill += time.Since(t5)
		plain += t1.Sub(t0)
		full += t2.Sub(t1)
		ns += t3.Sub(t2)
		bw += t4.Sub(t3)
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(plain), "plain-ms/op")
	b.ReportMetric(ms(full), "full-ms/op")
	b.ReportMetric(ms(ns), "nsonly-ms/op")
	b.ReportMetric(ms(bw), "bwrap-ms/op")
	b.ReportMetric(float64(full)/float64(bw), "full/bwrap")
	b.ReportMetric(float64(ns)/float64(bw), "nsonly/bwrap")
	b.ReportMetric(float64(full)/float64(plain), "full/plain")
	b.ReportMetric(ms(warm), "warm-ms/op")
	b.ReportMetric(float64(warm)/float64(bw), "warm/bwrap")
	b.ReportMetric(float64(warm)/float64(plain), "warm/plain")
	b.ReportMetric(ms(refill), "refill-wait-ms/op")
}

// BenchmarkRunnerThroughput: trivial tasks (/bin/true) through the Runner
// at parallelism 2 with warm sandboxes (Config.Prestart 2, the worker's
// configuration at capacity 2) against bwrap spawning the same command
// directly, 2 at a time, with the view of bwrapArgs. Rounds of 40 tasks
// alternate between the two, so outside load falls on both alike; the
// Runner's refills run inside its rounds (back to back, as a saturated
// worker runs). It reports both rates and runner/bwrap (goal >= 1). The
// Runner is configured as the worker's (homes bounded at DefaultDisk: its
// warm sandboxes are templates). CPU is the whole machine's busy time
// during each side's rounds (/proc/stat): a template's task inits are the
// template's children, not this process's, and the kernel's deferred work
// (a network namespace's teardown runs in a kworker) counts for both.
func BenchmarkRunnerThroughput(b *testing.B) {
	bwrap, root, bargs := bwrapBench(b)
	const parallel, perRound = 2, 40
	r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: root, Prestart: parallel, Defaults: Limits{Disk: DefaultDisk}})
	require.NoError(b, err)
	b.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	spec := Spec{Argv: []string{"/bin/true"}}
	res, err := r.Run(ctx, spec)
	require.NoError(b, err)
	b.Logf("runner: %s", res.InForce)
	round := func(task func() error) time.Duration {
		next := make(chan struct{}, perRound)
		for range perRound {
			next <- struct{}{}
		}
		close(next)
		errs := make(chan error, parallel)
		t0 := time.Now()
		for range parallel {
			go func() {
				for range next {
					if err := task(); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range parallel {
			require.NoError(b, <-errs)
		}
		return time.Since(t0)
	}
	runTask := func() error {
		res, err := r.Run(ctx, spec)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return err
	}
	bwrapTask := func() error {
		if out, err := exec.Command(bwrap, bargs...).CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	// The machine's busy CPU, per side.
	var tr, tb, cr, cb time.Duration
	timed := func(task func() error, wall, cpu *time.Duration) {
		c0 := sandboxtest.MachineCPU(b)
		*wall += round(task)
		*cpu += sandboxtest.MachineCPU(b) - c0
	}
	b.ResetTimer()
	for range b.N {
		timed(bwrapTask, &tb, &cb)
		timed(runTask, &tr, &cr)
	}
	tasks := float64(b.N * perRound)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(tasks/tr.Seconds(), "runner-tasks/s")
	b.ReportMetric(tasks/tb.Seconds(), "bwrap-tasks/s")
	b.ReportMetric(tb.Seconds()/tr.Seconds(), "runner/bwrap")
	b.ReportMetric(float64(cr.Microseconds())/1000/tasks, "runner-cpu-ms/task")
	b.ReportMetric(float64(cb.Microseconds())/1000/tasks, "bwrap-cpu-ms/task")
}
