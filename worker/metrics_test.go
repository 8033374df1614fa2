package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/worker"
)

// metricValue sums the samples of a gathered family whose labels include
// every pair in want (a counter's value, a gauge's, or a histogram's count).
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// setupFailOnce fails the first run of a command with a sandbox setup
// error (an infrastructure failure: the task is redelivered), then runs.
type setupFailOnce struct {
	inner  worker.Runner
	failed chan struct{}
}

func (r *setupFailOnce) Run(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
	select {
	case <-r.failed:
		return r.inner.Run(ctx, s)
	default:
		close(r.failed)
		return nil, &sandbox.SetupError{Step: "mount /proc", Err: errors.New("injected")}
	}
}

func TestMetricsCountTasksByOutcome(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	reg := prometheus.NewRegistry()
	runner := &setupFailOnce{inner: insecureRunner(t), failed: make(chan struct{})}
	startWorker(t, b, "m1", workerOpts{capacity: 2, runner: runner, metrics: reg})
	_, js := b.Dial(t, "pub")

	const batch = "metrics"
	publish(t, js, execTask(batch, "ok1", "/bin/true"), execTask(batch, "ok2", "/bin/true"),
		execTask(batch, "ok3", "/bin/true"), execTask(batch, "bad", "/bin/false"))
	publishRaw(t, js, batch, "junk", []byte(`{"v":1,"id":"junk"`))
	res := collect(t, js, batch, 5, 30*time.Second)
	require.Equal(t, messages.StatusInvalid, res["junk"].Status)

	// A result is counted just after it is stored: wait for the last one.
	require.Eventually(t, func() bool {
		return metricValue(t, reg, "warren_worker_tasks_finished_total", nil) == 5
	}, 10*time.Second, 10*time.Millisecond)
	finished := func(status messages.Status) float64 {
		return metricValue(t, reg, "warren_worker_tasks_finished_total", map[string]string{"profile": "default", "status": string(status)})
	}
	require.Equal(t, 3.0, finished(messages.StatusOK))
	require.Equal(t, 1.0, finished(messages.StatusFailed))
	require.Equal(t, 1.0, finished(messages.StatusInvalid))
	require.Equal(t, 1.0, metricValue(t, reg, "warren_worker_sandbox_setup_failures_total", map[string]string{"step": "mount /proc"}))
	require.Equal(t, 1.0, metricValue(t, reg, "warren_worker_redeliveries_total", nil), "the task whose setup failed ran again")
	require.Equal(t, 1.0, metricValue(t, reg, "warren_worker_dead_letters_total", map[string]string{"reason": "invalid"}))
	// Started: 4 runnable tasks plus the rerun of the one whose setup failed.
	require.Equal(t, 5.0, metricValue(t, reg, "warren_worker_tasks_started_total", nil))
	require.Equal(t, 5.0, metricValue(t, reg, "warren_worker_task_queue_wait_seconds", nil))
	require.Equal(t, 4.0, metricValue(t, reg, "warren_worker_task_duration_seconds", nil), "one duration per stored exec result")
	require.Equal(t, 2.0, metricValue(t, reg, "warren_worker_slots", nil))
	require.Equal(t, 0.0, metricValue(t, reg, "warren_worker_slots_busy", nil))
}

func TestMetricsRefuseASecondRegistration(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	nc, _ := b.Dial(t, "w")
	reg := prometheus.NewRegistry()
	cfg := worker.Config{Runner: insecureRunner(t), Capacity: 1, Metrics: reg}
	_, err := worker.New(nc, cfg)
	require.NoError(t, err)
	_, err = worker.New(nc, cfg)
	require.ErrorContains(t, err, "Metrics", "two workers on one registry would mix their counts")
}

// warmRunner is a Runner with a warm pool to report.
type warmRunner struct {
	worker.Runner
	stats sandbox.WarmStats
}

func (r warmRunner) Warm() sandbox.WarmStats { return r.stats }

// A Runner with a warm pool has its ready and starting sandboxes exported.
func TestMetricsReportTheWarmPool(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	reg := prometheus.NewRegistry()
	startWorker(t, b, "warm", workerOpts{capacity: 1, runner: warmRunner{Runner: insecureRunner(t), stats: sandbox.WarmStats{Ready: 3, Starting: 1}}, metrics: reg})
	require.Equal(t, 3.0, metricValue(t, reg, "warren_worker_warm_sandboxes_ready", nil))
	require.Equal(t, 1.0, metricValue(t, reg, "warren_worker_warm_sandboxes_starting", nil))
}
