package verify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"github.com/warrenhq/warren/verify"
	"github.com/warrenhq/warren/worker"
)

// BenchmarkCoqSystem compares, in one run and with the same parallelism,
// the trusted Coq check run directly in a loop against the same proofs sent
// through the whole system: publish -> broker -> worker -> sandbox -> Coq
// -> stored result. Metric: system/direct throughput (goal >= 1.0, issue 12).
func BenchmarkCoqSystem(b *testing.B) {
	if _, err := exec.LookPath("coqc"); err != nil {
		b.Skip("coqc not installed")
	}
	cases := verify.GoodCorpus(b)
	ps := verify.TestProfiles(b)
	const par = 2
	n := len(cases) * 2
	svc, skipped := verify.NewService(verify.NewTestChecker(b), ps, nil)
	require.Empty(b, skipped)
	br := brokertest.Start(b, brokertest.Options{})
	nc, _ := br.Dial(b, "bench-worker")
	// The runner as `warren worker` builds it: dedicated init, warm sandboxes
	// (slots: homes bounded at the worker's default disk limit).
	root, err := os.MkdirTemp("", "warren-bench-")
	require.NoError(b, err)
	require.NoError(b, os.Chmod(root, 0o755))
	b.Cleanup(func() { _ = os.RemoveAll(root) })
	runner, err := sandbox.New(sandbox.Config{ScratchRoot: root, InitPath: sandboxtest.BuildInit(b), Prestart: par,
		Defaults: sandbox.Limits{Disk: sandbox.DefaultDisk}})
	require.NoError(b, err)
	b.Cleanup(func() { _ = runner.Close() })
	require.NoError(b, runner.Start(context.Background()))
	w, err := worker.New(nc, worker.Config{
		HostID: "bench", Capacity: par, Runner: runner, Verifier: svc,
		PullWait: 200 * time.Millisecond, Logger: zerolog.Nop(),
	})
	require.NoError(b, err)
	require.NoError(b, w.Start(context.Background()))
	b.Cleanup(func() { _ = w.Stop(context.Background()) })

	// Besides throughput, each side's per-proof overhead: slot time (wall
	// time x parallelism) not spent in the checker's processes (direct: the
	// three processes' run time; system: the steps' wall time the results
	// report), per proof.
	var directRan, systemRan atomic.Int64 // nanoseconds (directRan over b.N times the rounds: Measure repeats)
	directRound := func() time.Duration {
		return verify.Measure(b, par, n, func(i int) {
			tc := cases[i%len(cases)]
			directRan.Add(int64(verify.DirectCoq(b, b.TempDir(), tc, tc.Spec(b))))
		})
	}
	systemRound := func(batch string) time.Duration {
		done := make(chan struct{})
		var got atomic.Int64
		sub, err := br.Conn.Subscribe(messages.BatchResultFilter(batch, 0), func(m *nats.Msg) {
			r, err := messages.DecodeResult(m.Data)
			if err != nil || r.Verdict == nil || !r.Verdict.Accepted {
				b.Errorf("not accepted: %v %s", err, m.Data)
				return
			}
			systemRan.Add(r.WallMS * int64(time.Millisecond))
			if got.Add(1) == int64(n) {
				close(done)
			}
		})
		require.NoError(b, err)
		defer func() { _ = sub.Unsubscribe() }()
		require.NoError(b, br.Conn.Flush())
		start := time.Now()
		for i := range n {
			tc := cases[i%len(cases)]
			t := messages.Task{V: messages.Version, ID: fmt.Sprintf("p%d", i), Batch: batch, Attempt: 1,
				Kind: messages.KindVerify, Profile: "coq", Verify: tc.Spec(b)}
			data, err := json.Marshal(t)
			require.NoError(b, err)
			_, err = br.JS.Publish(context.Background(), messages.TaskSubject("default", "coq", batch), data)
			require.NoError(b, err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Minute):
			b.Fatalf("%d of %d results", got.Load(), n)
		}
		return time.Since(start)
	}
	// Rounds alternate so that load from anything else on the host falls
	// on both sides alike.
	var direct, system time.Duration
	for round := range b.N * 2 {
		direct += directRound()
		system += systemRound(fmt.Sprintf("sys%d", round))
	}
	b.ReportMetric(float64(2*n*b.N)/direct.Seconds(), "direct_proofs/s")
	b.ReportMetric(float64(2*n*b.N)/system.Seconds(), "system_proofs/s")
	b.ReportMetric(direct.Seconds()/system.Seconds(), "system/direct")
	proofs := float64(2 * n * b.N)
	b.ReportMetric((par*direct.Seconds()-time.Duration(directRan.Load()/int64(b.N)).Seconds())/proofs*1000, "direct_overhead_ms/proof")
	b.ReportMetric((par*system.Seconds()-time.Duration(systemRan.Load()).Seconds())/proofs*1000, "system_overhead_ms/proof")
}
