package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// benchRunner is the strongest sandbox this host offers (what production
// uses), or the insecure mode where there is none, named in the output.
func benchRunner(b *testing.B) (*sandbox.Runner, string) {
	dir, err := os.MkdirTemp("", "warren-bench-")
	require.NoError(b, err)
	require.NoError(b, os.Chmod(dir, 0o755))
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	// As `warren worker` runs it: the dedicated init, a warm sandbox per
	// slot and a spare, homes bounded at the worker's default disk limit (without it no
	// task, bounded by the worker's DiskBytes, fits a warm home: every run
	// was cold).
	r, err := sandbox.New(sandbox.Config{ScratchRoot: dir, InitPath: sandboxtest.BuildInit(b), Prestart: runtime.NumCPU() + 1,
		Defaults: sandbox.Limits{Disk: sandbox.DefaultDisk}})
	require.NoError(b, err)
	b.Cleanup(func() { _ = r.Close() })
	require.NoError(b, r.Start(context.Background()))
	res, err := r.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}})
	if err == nil && res.ExitCode == 0 {
		return r, res.InForce
	}
	b.Logf("no isolation available (%v): benchmarking the insecure mode", err)
	r, err = sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: dir})
	require.NoError(b, err)
	b.Cleanup(func() { _ = r.Close() })
	require.NoError(b, r.Start(context.Background()))
	return r, "none (insecure)"
}

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkQueueVsDirect runs the same trivial tasks (/bin/true) through the
// whole system (publish -> broker -> worker -> sandbox -> result stored) and
// directly through the same sandbox runner with the same parallelism, in the
// same run, and reports throughput and latency with their ratios. Two more
// baselines: plain fork/exec without any sandbox, and bwrap spawning the
// command directly (issue 14's goal: system/bwrap >= 1).
func BenchmarkQueueVsDirect(b *testing.B) {
	const tasks = 300
	par := runtime.NumCPU()
	runner, mode := benchRunner(b)
	br := brokertest.Start(b, brokertest.Options{})
	startWorker(b, br, "bench", workerOpts{capacity: par, runner: runner})
	b.Logf("sandbox: %s, parallelism %d, %d tasks per round", mode, par, tasks)

	// The baseline of issue 14: bwrap with namespace mode's view (without
	// its /etc files, which /bin/true does not need: a cheaper baseline).
	bwrap := sandboxtest.Bwrap(b)
	bargs := sandboxtest.BwrapArgs(b.TempDir(), nil, "/bin/true")
	// Rates are over every round (tasks / the sum of the rounds' times), so
	// one round's noise does not decide them.
	var sysTime, dirTime, forkTime, bwrapTime time.Duration
	var rounds int
	var sysLat, dirLat []time.Duration
	for round := 0; b.Loop(); round++ {
		// Direct: the same runner, the same parallelism.
		dirLat = nil
		var mu sync.Mutex
		var next atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for range par {
			wg.Go(func() {
				for next.Add(1) <= tasks {
					t0 := time.Now()
					res, err := runner.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}})
					if err != nil || res.ExitCode != 0 {
						b.Errorf("direct run: %v %+v", err, res)
						return
					}
					mu.Lock()
					dirLat = append(dirLat, time.Since(t0))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		dirTime += time.Since(start)

		// Plain fork/exec, no sandbox.
		next.Store(0)
		start = time.Now()
		for range par {
			wg.Go(func() {
				for next.Add(1) <= tasks {
					if err := exec.Command("/bin/true").Run(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		forkTime += time.Since(start)

		// bwrap spawning the same command directly, the same parallelism.
		next.Store(0)
		start = time.Now()
		for range par {
			wg.Go(func() {
				for next.Add(1) <= tasks {
					if out, err := exec.Command(bwrap, bargs...).CombinedOutput(); err != nil {
						b.Errorf("bwrap: %v: %s", err, out)
						return
					}
				}
			})
		}
		wg.Wait()
		bwrapTime += time.Since(start)

		// Through the system: publish all, then wait for every result.
		var sysRate float64
		sysRate, sysLat = systemBatch(b, br, fmt.Sprintf("bench%d", round), tasks)
		sysTime += time.Duration(float64(time.Second) * tasks / sysRate)
		rounds++
	}
	rate := func(d time.Duration) float64 { return float64(rounds*tasks) / d.Seconds() }
	sysRate, dirRate, forkRate, bwrapRate := rate(sysTime), rate(dirTime), rate(forkTime), rate(bwrapTime)
	b.ReportMetric(bwrapRate, "bwrap_tasks/s")
	b.ReportMetric(sysRate/bwrapRate, "system/bwrap")
	b.ReportMetric(sysRate, "system_tasks/s")
	b.ReportMetric(dirRate, "direct_tasks/s")
	b.ReportMetric(forkRate, "forkexec_tasks/s")
	b.ReportMetric(sysRate/dirRate, "system/direct")
	b.ReportMetric(sysRate/forkRate, "system/forkexec")
	b.ReportMetric(float64(percentile(dirLat, 0.5).Microseconds()), "direct_p50_us")
	b.ReportMetric(float64(percentile(dirLat, 0.99).Microseconds()), "direct_p99_us")
	// Batch latency: submit -> stored result while the whole batch queues.
	b.ReportMetric(float64(percentile(sysLat, 0.5).Microseconds()), "batch_p50_us")
	b.ReportMetric(float64(percentile(sysLat, 0.99).Microseconds()), "batch_p99_us")
}

// BenchmarkQueueLatency is submit -> stored result for one task at a time
// (no queueing), against one direct sandbox run.
func BenchmarkQueueLatency(b *testing.B) {
	runner, mode := benchRunner(b)
	br := brokertest.Start(b, brokertest.Options{})
	startWorker(b, br, "bench", workerOpts{capacity: 1, runner: runner})
	b.Logf("sandbox: %s", mode)
	results := make(chan struct{}, 1)
	sub, err := br.Conn.Subscribe(messages.BatchResultFilter("lat", 0), func(*nats.Msg) { results <- struct{}{} })
	require.NoError(b, err)
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(b, br.Conn.Flush())
	var sys, dir []time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		_, err := runner.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}})
		require.NoError(b, err)
		dir = append(dir, time.Since(t0))

		id := fmt.Sprintf("t%d", i)
		i++
		t0 = time.Now()
		publish(b, br.JS, execTask("lat", id, "/bin/true"))
		<-results
		sys = append(sys, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(sys, 0.5).Microseconds()), "system_p50_us")
	b.ReportMetric(float64(percentile(sys, 0.99).Microseconds()), "system_p99_us")
	b.ReportMetric(float64(percentile(dir, 0.5).Microseconds()), "direct_p50_us")
	b.ReportMetric(float64(percentile(dir, 0.99).Microseconds()), "direct_p99_us")
	b.ReportMetric(float64(percentile(sys, 0.5))/float64(percentile(dir, 0.5)), "p50_ratio")
}

// systemBatch publishes n trivial tasks at once as batch and waits for
// every result: the rate and each task's submit -> stored result latency.
func systemBatch(b *testing.B, br *brokertest.Broker, batch string, n int) (float64, []time.Duration) {
	var mu sync.Mutex
	sent := make(map[string]time.Time, n)
	var lat []time.Duration
	done := make(chan struct{})
	var got atomic.Int64
	sub, err := br.Conn.Subscribe(messages.BatchResultFilter(batch, 0), func(m *nats.Msg) {
		r, err := messages.DecodeResult(m.Data)
		if err != nil || r.Status != messages.StatusOK {
			b.Errorf("result: %v %s", err, m.Data)
			return
		}
		mu.Lock()
		lat = append(lat, time.Since(sent[r.TaskID]))
		mu.Unlock()
		if got.Add(1) == int64(n) {
			close(done)
		}
	})
	require.NoError(b, err)
	defer func() { _ = sub.Unsubscribe() }()
	require.NoError(b, br.Conn.Flush())
	start := time.Now()
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		data, _ := json.Marshal(execTask(batch, id, "/bin/true"))
		msg := &nats.Msg{Subject: messages.TaskSubject("default", "default", batch), Data: data, Header: nats.Header{}}
		msg.Header.Set(messages.HeaderMsgID, messages.MsgID(batch, id, 1))
		mu.Lock()
		sent[id] = time.Now()
		mu.Unlock()
		if _, err := br.JS.PublishMsgAsync(msg); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d results", got.Load(), n)
	}
	rate := float64(n) / time.Since(start).Seconds()
	mu.Lock()
	defer mu.Unlock()
	return rate, lat
}
