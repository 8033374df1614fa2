package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/warrenhq/warren/broker/brokertest"
)

// BenchmarkClusterVsSingle runs the same trivial batch through one
// embedded server at R1 and through an in-process 3-node cluster at R3,
// three workers each (capacity 8, a 1ms runner: the queue's cost, not the
// sandbox's), in the same run, alternating, and reports both throughputs,
// their ratio and the p99 submit->result latency of each.
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
	for round := 0; b.Loop(); round++ {
		one = runBatch(b, single.Conn, fmt.Sprintf("r1-%d", round), tasks, 2*time.Minute, nil)
		three = runBatch(b, cluster.admin, fmt.Sprintf("r3-%d", round), tasks, 2*time.Minute, nil)
	}
	b.Logf("single node R1: %s", one)
	b.Logf("3-node cluster R3: %s", three)
	b.ReportMetric(one.rate(), "r1_tasks/s")
	b.ReportMetric(three.rate(), "r3_tasks/s")
	b.ReportMetric(three.rate()/one.rate(), "r3/r1")
	b.ReportMetric(float64(one.P99.Milliseconds()), "r1_p99_ms")
	b.ReportMetric(float64(three.P99.Milliseconds()), "r3_p99_ms")
}
