package worker_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// BenchmarkSaturatedWorker keeps one worker with 2 slots (`warren up
// --capacity 2`: the embedded broker and the worker in one process, the
// production runner) saturated with batches of trivial tasks and reports
// the rate and the CPU per task, this process's (broker + worker: what a
// CPU profile of it shows) and the rest of the machine's (the sandboxes). Run
// it with -cpuprofile for where the worker's time goes (docs/benchmarks.md).
func BenchmarkSaturatedWorker(b *testing.B) {
	const tasks = 300
	runner, mode := benchRunner(b)
	br := brokertest.Start(b, brokertest.Options{})
	startWorker(b, br, "saturated", workerOpts{capacity: 2, runner: runner})
	b.Logf("sandbox: %s, 2 slots, %d tasks per round", mode, tasks)
	var rates []float64
	self0, _ := rusage(b)
	machine0 := sandboxtest.MachineCPU(b)
	for round := 0; b.Loop(); round++ {
		rate, _ := systemBatch(b, br, fmt.Sprintf("sat%d", round), tasks)
		rates = append(rates, rate)
	}
	self, _ := rusage(b)
	machine := sandboxtest.MachineCPU(b)
	n := time.Duration(tasks * len(rates))
	// The rest of the machine's CPU is the sandboxes' (a slot's task inits
	// are the slot parent's children, so this process's rusage misses
	// them) and the kernel's deferred work.
	b.Logf("rounds %.1f tasks/s; CPU per task: %s in this process, %s in the rest of the machine", rates, (self-self0)/n, (machine-machine0-(self-self0))/n)
	b.ReportMetric(float64(((self - self0) / n).Microseconds()), "self_cpu_us/task")
	b.ReportMetric(float64(((machine - machine0 - (self - self0)) / n).Microseconds()), "sandbox_cpu_us/task")
	b.ReportMetric(rates[len(rates)-1], "tasks/s")
}

// rusage is the CPU time (user+system) of this process and of its reaped
// children so far.
func rusage(b *testing.B) (self, children time.Duration) {
	var s, c syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &s))
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c))
	return time.Duration(s.Utime.Nano() + s.Stime.Nano()), time.Duration(c.Utime.Nano() + c.Stime.Nano())
}
