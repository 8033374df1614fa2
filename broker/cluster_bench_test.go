package broker_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
)

// BenchmarkClusterVsSingle runs the same trivial batch through one
// embedded server at R1 and through an in-process 3-node cluster at R3,
// three workers each (capacity 8, a 1ms runner: the queue's cost, not the
// sandbox's), in the same run, alternating, and reports both throughputs,
// their ratio and the p99 submit->result latency of each, and the process
// CPU time per task of each (everything runs in this process: on a
// machine with fewer cores than the three nodes need, the ratio is the
// CPU's).
func BenchmarkClusterVsSingle(b *testing.B) {
	const tasks = 1000
	single := brokertest.Start(b, brokertest.Options{})
	var singleConns []*nats.Conn
	for i := range 3 {
		nc, _ := single.Dial(b, fmt.Sprintf("worker-%d", i))
		singleConns = append(singleConns, nc)
	}
	fleetWorkers(b, singleConns, 8)

	cluster := startClusterFleet(b, 8)

	var one, three batchRun
	var cpu1, cpu3 time.Duration
	for round := 0; b.Loop(); round++ {
		c0 := processCPU(b)
		one = runBatch(b, single.Conn, fmt.Sprintf("r1-%d", round), tasks, 2*time.Minute, nil)
		c1 := processCPU(b)
		three = runBatch(b, cluster.admin, fmt.Sprintf("r3-%d", round), tasks, 2*time.Minute, nil)
		cpu1, cpu3 = c1-c0, processCPU(b)-c1
	}
	b.Logf("single node R1: %s, CPU %s per task", one, cpu1/tasks)
	b.Logf("3-node cluster R3: %s, CPU %s per task (all three nodes, workers and client in this process)", three, cpu3/tasks)
	b.ReportMetric(float64(cpu1.Microseconds())/tasks, "r1_cpu_us/task")
	b.ReportMetric(float64(cpu3.Microseconds())/tasks, "r3_cpu_us/task")
	b.ReportMetric(one.rate(), "r1_tasks/s")
	b.ReportMetric(three.rate(), "r3_tasks/s")
	b.ReportMetric(three.rate()/one.rate(), "r3/r1")
	b.ReportMetric(float64(one.P99.Milliseconds()), "r1_p99_ms")
	b.ReportMetric(float64(three.P99.Milliseconds()), "r3_p99_ms")
}

// processCPU is this process's user+system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
