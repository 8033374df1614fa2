package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/worker"
)

// trivialRunner stands in for the sandbox: these tests are about the queue
// on a cluster, not isolation (package sandbox proves that). A run costs
// about what /bin/true in a warm sandbox costs.
type trivialRunner struct{}

func (trivialRunner) Run(ctx context.Context, _ sandbox.Spec) (*sandbox.Result, error) {
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &sandbox.Result{InForce: "none (test)", Wall: time.Millisecond}, nil
}

// fleetWorkers starts one worker per connection, stopped in t.Cleanup.
func fleetWorkers(t testing.TB, conns []*nats.Conn, capacity int) []*worker.Worker {
	t.Helper()
	return fleetWorkersOn(t, conns, capacity, trivialRunner{}, messages.IsolationNone)
}

// fleetWorkersOn is fleetWorkers with the given runner and the isolation it
// offers.
func fleetWorkersOn(t testing.TB, conns []*nats.Conn, capacity int, runner worker.Runner, iso messages.Isolation) []*worker.Worker {
	t.Helper()
	var ws []*worker.Worker
	for i, nc := range conns {
		w, err := worker.New(nc, worker.Config{
			HostID:    fmt.Sprintf("host-%d", i+1),
			Capacity:  capacity,
			Runner:    runner,
			Isolation: []messages.Isolation{iso},
			// The production defaults (AckWait, PullWait, retries): the
			// stalls measured are the ones a fleet sees.
			Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
		})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		require.NoError(t, w.Start(ctx))
		cancel()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = w.Stop(ctx)
		})
		ws = append(ws, w)
	}
	return ws
}

// trivialBatch is n exec tasks of /bin/true.
func trivialBatch(t testing.TB, id string, n int) *scheduler.Batch {
	t.Helper()
	tasks := make([]messages.Task, n)
	for i := range tasks {
		tasks[i] = messages.Task{V: messages.Version, ID: fmt.Sprintf("t%05d", i), Kind: messages.KindExec, Argv: []string{"/bin/true"}}
	}
	b, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{Batch: id})
	require.NoError(t, err)
	return b
}

// batchRun is what one batch through the fleet measured.
type batchRun struct {
	Tasks      int
	Elapsed    time.Duration // first publish to last result stored
	MaxStall   time.Duration // longest gap between consecutive results stored
	StallAfter int           // results stored before the longest gap
	P50, P99   time.Duration // submit (task stored) -> result stored
}

func (r batchRun) rate() float64 { return float64(r.Tasks) / r.Elapsed.Seconds() }

func (r batchRun) String() string {
	return fmt.Sprintf("%d tasks in %s (%.0f/s), longest stall %s after %d results, submit->result p50 %s p99 %s",
		r.Tasks, r.Elapsed.Round(time.Millisecond), r.rate(), r.MaxStall.Round(time.Millisecond), r.StallAfter,
		r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond))
}

// runBatch publishes a batch of n trivial tasks through the scheduler, runs
// during (if any) once the first results are in, waits for every result and
// checks each task has exactly one (counted by subject, from the stream's
// own per-subject state). Completion and submit times are the servers'
// store timestamps.
func runBatch(t testing.TB, nc *nats.Conn, id string, n int, timeout time.Duration, during func(stored func() int)) batchRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	client, err := scheduler.New(nc, scheduler.Config{Logger: zerolog.Nop()})
	require.NoError(t, err)
	start := time.Now()
	_, err = client.Publish(ctx, trivialBatch(t, id, n))
	require.NoError(t, err)
	stored := func() int {
		ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
		defer icancel()
		s, err := js.Stream(ictx, messages.StreamResults)
		if err != nil {
			return -1 // no leader right now
		}
		info, err := s.Info(ictx, jetstream.WithSubjectFilter(messages.BatchResultFilter(id, 0)))
		if err != nil {
			return -1
		}
		return len(info.State.Subjects)
	}
	if during != nil {
		during(stored)
	}
	for stored() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("batch %s: %d of %d results after %s", id, max(stored(), 0), n, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return measure(t, ctx, js, id, n, start)
}

// measure reads the batch's tasks and results back and checks one result
// per task attempt.
func measure(t testing.TB, ctx context.Context, js jetstream.JetStream, id string, n int, start time.Time) batchRun {
	t.Helper()
	s, err := js.Stream(ctx, messages.StreamResults)
	require.NoError(t, err)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(messages.BatchResultFilter(id, 0)))
	require.NoError(t, err)
	require.Len(t, info.State.Subjects, n, "one result subject per task")
	for subj, count := range info.State.Subjects {
		require.EqualValues(t, 1, count, "results on %s", subj)
	}
	submitted := storeTimes(t, ctx, js, messages.StreamTasks, messages.BatchTaskFilter(id), n, func(m jetstream.Msg) string { return m.Headers().Get(messages.HeaderTaskID) })
	completed := storeTimes(t, ctx, js, messages.StreamResults, messages.BatchResultFilter(id, 0), n, func(m jetstream.Msg) string {
		r, err := messages.DecodeResult(m.Data())
		require.NoError(t, err)
		require.Equal(t, messages.StatusOK, r.Status, "task %s: %s", r.TaskID, r.Error)
		return r.TaskID
	})
	var lat []time.Duration
	var ends []time.Time
	for task, end := range completed {
		begin, ok := submitted[task]
		require.True(t, ok, "result for a task never submitted: %s", task)
		lat = append(lat, end.Sub(begin))
		ends = append(ends, end)
	}
	slices.Sort(lat)
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	run := batchRun{Tasks: n, Elapsed: ends[len(ends)-1].Sub(start), P50: lat[len(lat)/2], P99: lat[len(lat)*99/100]}
	for i := 1; i < len(ends); i++ {
		if gap := ends[i].Sub(ends[i-1]); gap > run.MaxStall {
			run.MaxStall, run.StallAfter = gap, i
		}
	}
	return run
}

// storeTimes reads n messages of a stream under filter with an ordered
// consumer and returns their store time by key. A read that fails (a node
// just restarted answers "no responders" until its JetStream is back)
// starts over, until ctx ends.
func storeTimes(t testing.TB, ctx context.Context, js jetstream.JetStream, stream, filter string, n int, key func(jetstream.Msg) string) map[string]time.Time {
	t.Helper()
	for {
		out, err := readStoreTimes(ctx, js, stream, filter, n, key)
		if err == nil {
			return out
		}
		require.NoError(t, ctx.Err(), "reading %s: %v", stream, err)
		t.Logf("reading %s: %v; again", stream, err)
		time.Sleep(200 * time.Millisecond) // retry pacing
	}
}

func readStoreTimes(ctx context.Context, js jetstream.JetStream, stream, filter string, n int, key func(jetstream.Msg) string) (map[string]time.Time, error) {
	c, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, n)
	for len(out) < n {
		msgs, err := c.Fetch(min(n-len(out), 500), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		for m := range msgs.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			k := key(m)
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("%s: a second message for %s", stream, k)
			}
			out[k] = md.Timestamp
		}
		if err := msgs.Error(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitStored polls stored() until it reaches at least n, for up to d.
func waitStored(t testing.TB, stored func() int, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for stored() < n {
		if time.Now().After(deadline) {
			t.Errorf("fewer than %d results after %s", n, d)
			return
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
}

// logRun reports a run in the test log in one line.
func logRun(t testing.TB, name string, r batchRun) {
	t.Helper()
	t.Logf("%s: %s", name, r)
}

func js(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}
