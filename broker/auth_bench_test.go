package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/worker"
)

// benchFleet is a broker, one worker and a scheduler client, all over TCP.
type benchFleet struct {
	client *scheduler.Client
	tenant string
}

func startBenchWorker(b *testing.B, nc *nats.Conn, runner *sandbox.Runner) {
	w, err := worker.New(nc, worker.Config{
		HostID: "bench", Capacity: 2, Runner: runner,
		Isolation: []messages.Isolation{messages.IsolationNone},
		Logger:    zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.WarnLevel),
	})
	require.NoError(b, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(b, w.Start(ctx))
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
}

// round publishes n trivial tasks and, with collect, waits for every
// result; it returns tasks per second.
func (f *benchFleet) round(b *testing.B, name string, n int, collect bool) float64 {
	tasks := make([]messages.Task, n)
	for i := range tasks {
		tasks[i] = messages.Task{ID: fmt.Sprintf("t%d", i), Kind: messages.KindExec, Argv: []string{"/bin/true"}}
	}
	batch, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{Batch: name, Tenant: f.tenant})
	require.NoError(b, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	_, err = f.client.Publish(ctx, batch)
	require.NoError(b, err)
	if collect {
		rep, err := f.client.Collect(ctx, scheduler.CollectOptions{Batch: batch.ID})
		require.NoError(b, err)
		require.Equal(b, n, rep.Counts[messages.StatusOK], "every task ran: %+v", rep.Counts)
	}
	return float64(n) / time.Since(start).Seconds()
}

// benchFleets starts a broker without auth and one with accounts,
// permissions and TLS, each with a scheduler client and, withWorker, a
// worker on the insecure runner.
func benchFleets(b *testing.B, withWorker bool) (plain, secured *benchFleet) {
	runner, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: b.TempDir()})
	require.NoError(b, err)
	b.Cleanup(func() { _ = runner.Close() })
	require.NoError(b, runner.Start(context.Background()))
	plainBroker := brokertest.Start(b, brokertest.Options{})
	af := startAuthFleet(b)
	if withWorker {
		wnc, _ := plainBroker.Dial(b, "bench-worker")
		startBenchWorker(b, wnc, runner)
		startBenchWorker(b, af.as(b, broker.WorkerCreds).nc, runner)
	}
	pc, err := scheduler.New(plainBroker.Conn, scheduler.Config{})
	require.NoError(b, err)
	ac, err := scheduler.New(af.as(b, "alice.creds").nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
	require.NoError(b, err)
	return &benchFleet{client: pc}, &benchFleet{client: ac, tenant: "alice"}
}

// compare alternates rounds on both fleets and reports the medians and the
// median of each round's ratio (both sides of a round saw the same load).
func compare(b *testing.B, plain, secured *benchFleet, n int, collect bool) {
	var plainRates, authRates, ratios []float64
	for round := 0; b.Loop(); round++ {
		// Alternate which goes first, so drift in the machine's load does
		// not favour one side.
		p := func() { plainRates = append(plainRates, plain.round(b, fmt.Sprintf("p%d", round), n, collect)) }
		a := func() { authRates = append(authRates, secured.round(b, fmt.Sprintf("a%d", round), n, collect)) }
		if round%2 == 0 {
			p()
			a()
		} else {
			a()
			p()
		}
		ratios = append(ratios, authRates[round]/plainRates[round])
		b.Logf("round %d: plain %.0f tasks/s, auth+TLS %.0f tasks/s", round, plainRates[round], authRates[round])
	}
	b.ReportMetric(median(plainRates), "plain-tasks/s")
	b.ReportMetric(median(authRates), "auth-tls-tasks/s")
	b.ReportMetric(median(ratios), "auth/plain")
}

// BenchmarkAuthTLSPublish publishes tasks (stored, acknowledged, nothing
// runs them): the bus alone, where authentication, the account import hop
// and TLS weigh most.
func BenchmarkAuthTLSPublish(b *testing.B) {
	plain, secured := benchFleets(b, false)
	compare(b, plain, secured, 2000, false)
}

// BenchmarkAuthTLSOverhead runs trivial tasks through the whole system
// (scheduler → broker → worker → result → collector) on a broker without
// auth and on one with accounts, permissions and TLS, alternating rounds
// in the same run. The runner is the insecure one so that the bus, not the
// sandbox (far slower per task), is what is measured.
func BenchmarkAuthTLSOverhead(b *testing.B) {
	plain, secured := benchFleets(b, true)
	compare(b, plain, secured, 300, true)
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
