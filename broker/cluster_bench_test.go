package broker_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// BenchmarkClusterVsSingle runs the same trivial batch through one
// embedded server at R1 and through an in-process 3-node cluster at R3,
// three workers each (capacity 8, a 1ms runner: the queue's cost, not the
// sandbox's), in the same run, alternating, and reports the medians over
// the rounds of both throughputs, of the per-round ratio and of the p99
// submit->result latency of each, the process CPU time per task of each
// (everything runs in this process: on a machine with fewer cores than
// the three nodes need, the ratio is the CPU's), and what a task costs the
// bus: the messages the workers' connections send and receive and the
// writes stored in the claims bucket, per task.
func BenchmarkClusterVsSingle(b *testing.B) {
	single := brokertest.Start(b, brokertest.Options{})
	var singleConns []*nats.Conn
	for i := range 3 {
		nc, _ := single.Dial(b, fmt.Sprintf("worker-%d", i))
		singleConns = append(singleConns, nc)
	}
	fleetWorkers(b, singleConns, 8)
	cluster := startClusterFleet(b, 8)
	compareSides(b, 1000, single.Conn, singleConns, cluster)
}

// BenchmarkClusterVsSingleSandboxed is BenchmarkClusterVsSingle as users
// run it: the same trivial batch (/bin/true) run by real sandboxes (one
// runner with warm sandboxes shared by the six workers, in the host's
// strongest mode), three workers of one slot each per side. The queue's
// share of a task is then what R3 adds to a sandboxed run; the other
// benchmark isolates the queue's own cost.
func BenchmarkClusterVsSingleSandboxed(b *testing.B) {
	root, err := os.MkdirTemp("", "warren-cluster-bench-")
	require.NoError(b, err)
	require.NoError(b, os.Chmod(root, 0o711)) // sandbox uids reach their scratch
	b.Cleanup(func() { _ = os.RemoveAll(root) })
	runner, err := sandbox.New(sandbox.Config{ScratchRoot: root, InitPath: sandboxtest.BuildInit(b), Prestart: 3})
	require.NoError(b, err)
	b.Cleanup(func() { _ = runner.Close() })
	require.NoError(b, runner.Start(context.Background()))

	single := brokertest.Start(b, brokertest.Options{})
	var singleConns []*nats.Conn
	for i := range 3 {
		nc, _ := single.Dial(b, fmt.Sprintf("worker-%d", i))
		singleConns = append(singleConns, nc)
	}
	fleetWorkersOn(b, singleConns, 1, runner, messages.IsolationAuto)
	cluster := startClusterFleetOn(b, 1, runner, messages.IsolationAuto)
	compareSides(b, 300, single.Conn, singleConns, cluster)
}

// compareSides runs batches of n tasks through both sides, alternating,
// and reports the medians.
func compareSides(b *testing.B, tasks int, singleAdmin *nats.Conn, singleConns []*nats.Conn, cluster *clusterFleet) {
	r1 := fleetSide{name: "single node R1", admin: singleAdmin, workers: singleConns}
	r3 := fleetSide{name: "3-node cluster R3", admin: cluster.admin, workers: cluster.workers}

	var ratios []float64
	for round := 0; b.Loop(); round++ {
		sides := []*fleetSide{&r1, &r3}
		if round%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0] // alternate who goes first
		}
		for _, s := range sides {
			s.round(b, fmt.Sprintf("%s-%d", s.name[:1], round), tasks)
		}
		ratios = append(ratios, r3.runs[round].rate()/r1.runs[round].rate())
	}
	for _, s := range []*fleetSide{&r1, &r3} {
		b.Logf("%s: median of %d rounds: %s", s.name, len(s.runs), s.summary())
	}
	b.Logf("r3/r1 per round: %.3f", ratios)
	b.ReportMetric(median(ratios), "r3/r1")
	r1.report(b, "r1")
	r3.report(b, "r3")
}

// fleetSide is one side of BenchmarkClusterVsSingle and what its rounds
// measured.
type fleetSide struct {
	name    string
	admin   *nats.Conn
	workers []*nats.Conn

	runs                        []batchRun
	cpu, msgsIn, msgsOut, claim []float64 // per task, per round
}

func (s *fleetSide) round(b *testing.B, id string, tasks int) {
	in0, out0 := connMsgs(s.workers)
	claims0 := claimsLastSeq(b, s.admin)
	c0 := processCPU(b)
	s.runs = append(s.runs, runBatch(b, s.admin, id, tasks, 2*time.Minute, nil))
	cpu := processCPU(b) - c0
	in1, out1 := connMsgs(s.workers)
	n := float64(tasks)
	s.cpu = append(s.cpu, float64(cpu.Microseconds())/n)
	s.msgsIn = append(s.msgsIn, float64(in1-in0)/n)
	s.msgsOut = append(s.msgsOut, float64(out1-out0)/n)
	s.claim = append(s.claim, float64(claimsLastSeq(b, s.admin)-claims0)/n)
}

func (s *fleetSide) rates() (rate, p99 []float64) {
	for _, r := range s.runs {
		rate = append(rate, r.rate())
		p99 = append(p99, float64(r.P99.Milliseconds()))
	}
	return rate, p99
}

func (s *fleetSide) summary() string {
	rate, p99 := s.rates()
	return fmt.Sprintf("%.0f tasks/s (rounds %.0f), p99 submit->result %.0f ms, CPU %.0f µs/task, worker msgs per task in %.2f out %.2f, claims writes per task %.2f",
		median(rate), rate, median(p99), median(s.cpu), median(s.msgsIn), median(s.msgsOut), median(s.claim))
}

func (s *fleetSide) report(b *testing.B, prefix string) {
	rate, p99 := s.rates()
	b.ReportMetric(median(rate), prefix+"_tasks/s")
	b.ReportMetric(median(p99), prefix+"_p99_ms")
	b.ReportMetric(median(s.cpu), prefix+"_cpu_us/task")
}

// connMsgs sums the messages received and sent by conns.
func connMsgs(conns []*nats.Conn) (in, out uint64) {
	for _, nc := range conns {
		st := nc.Stats()
		in, out = in+st.InMsgs, out+st.OutMsgs
	}
	return in, out
}

// claimsLastSeq is the claims bucket's last stream sequence: every create,
// refresh, purge and expiry marker is one.
func claimsLastSeq(b *testing.B, nc *nats.Conn) uint64 {
	js, err := jetstream.New(nc)
	require.NoError(b, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "KV_"+messages.BucketClaims)
	require.NoError(b, err)
	return s.CachedInfo().State.LastSeq
}

// processCPU is this process's user+system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
