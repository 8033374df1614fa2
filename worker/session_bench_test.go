package worker_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/scheduler"
)

// BenchmarkSessionOps measures, through NATS on a warm host, the latency of
// a session's create, an exec of `true` in it and its delete, beside a
// one-shot task (`/bin/true`: publish -> worker -> sandbox -> final event)
// in the same run. Sessions and tasks share the worker's runner: the
// strongest sandbox this host has, a warm sandbox per core (Prestart), the
// dedicated init; a session is one run of the agent in it. "Warm host":
// before each timed op the runner's warm pools are full (the wait for the
// refills of the previous ops is outside the timings), as a host that is
// not saturated is.
func BenchmarkSessionOps(b *testing.B) {
	const n = 200
	runner, mode := benchRunner(b)
	br := brokertest.Start(b, brokertest.Options{})
	startSessionHost(b, br, "bench", sessionOpts{capacity: 4, runner: runner})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := sessionClient(b, br)
	cnc, cjs := br.Dial(b, "bench-tasks")
	b.Logf("tasks and sessions: sandbox %s", mode)
	for b.Loop() {
		var create, execT, del, task []time.Duration
		for i := range n {
			// The default view's pool, then (once a session was made) the
			// agent's too: Prestart (one per core) each.
			views := 2
			if i == 0 {
				views = 1
			}
			warm(b, runner, views*runtime.NumCPU())
			t0 := time.Now()
			sb, err := c.CreateSandbox(ctx, scheduler.CreateOptions{})
			require.NoError(b, err)
			t1 := time.Now()
			exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"true"}}, nil, nil)
			require.NoError(b, err)
			require.Zero(b, exit.ExitCode)
			t2 := time.Now()
			require.NoError(b, sb.Delete(ctx))
			t3 := time.Now()
			create, execT, del = append(create, t1.Sub(t0)), append(execT, t2.Sub(t1)), append(del, t3.Sub(t2))

			batch := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
			ev := subscribeEvents(b, cnc, batch, "t")
			warm(b, runner, 2*runtime.NumCPU())
			t4 := time.Now()
			publish(b, cjs, execTask(batch, "t", "/bin/true"))
			evs := ev.wait(b, time.Minute)
			task = append(task, time.Since(t4))
			require.Equal(b, messages.StatusOK, evs[len(evs)-1].Status)
		}
		for _, m := range []struct {
			name string
			d    []time.Duration
		}{{"create", create}, {"exec_true", execT}, {"delete", del}, {"task", task}} {
			p50, p99 := percentile(m.d, 0.5), percentile(m.d, 0.99)
			b.ReportMetric(float64(p50.Microseconds())/1000, m.name+"_p50_ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, m.name+"_p99_ms")
			b.Logf("%-9s p50 %6.2f ms  p99 %6.2f ms", m.name, float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000)
		}
	}
}

// warm waits (outside the timings) until the runner builds no warm
// sandbox and holds want ready ones.
func warm(b *testing.B, r *sandbox.Runner, want int) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := r.Warm()
		if s.Starting == 0 && s.Ready >= want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the warm pools did not refill: %+v", s)
		}
		time.Sleep(time.Millisecond)
	}
}
