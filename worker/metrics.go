package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// metrics are the worker's Prometheus collectors. A nil *metrics records
// nothing, so a worker without Config.Metrics pays one nil check per event.
//
// Labels are bounded: profile (the profiles this worker serves), status and
// verdict reason (fixed sets in messages), setup step (the sandbox's step
// names) and dead-letter reason (invalid, infra). Never a task or batch id.
type metrics struct {
	started       *prometheus.CounterVec   // profile
	finished      *prometheus.CounterVec   // profile, status
	duration      *prometheus.HistogramVec // profile
	queueWait     *prometheus.HistogramVec // profile
	setupFailures *prometheus.CounterVec   // step
	verdicts      *prometheus.CounterVec   // profile, verdict, reason
	redeliveries  *prometheus.CounterVec   // profile
	deadLetters   *prometheus.CounterVec   // reason
	pullErrors    *prometheus.CounterVec   // profile
	doorbells     *prometheus.CounterVec   // profile
}

// warmReporter is a Runner with a warm pool (*sandbox.Runner).
type warmReporter interface{ Warm() sandbox.WarmStats }

// metricsNamespace prefixes every metric: warren_worker_*.
const metricsNamespace = "warren_worker"

// newMetrics registers the worker's collectors on reg; slots and busy are
// read from the worker when scraped.
func newMetrics(reg prometheus.Registerer, w *Worker) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
	}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: name, Help: help, Buckets: buckets}, labels)
	}
	// 1 ms .. ~2.3 h: trivial exec tasks to long proofs.
	durations := prometheus.ExponentialBuckets(0.001, 4, 12)
	m := &metrics{
		started:       counter("tasks_started_total", "Tasks that started running in a sandbox.", "profile"),
		finished:      counter("tasks_finished_total", "Tasks that ended with a stored result, by status.", "profile", "status"),
		duration:      hist("task_duration_seconds", "Wall time from start to stored result.", durations, "profile"),
		queueWait:     hist("task_queue_wait_seconds", "Time from publication to start on this host.", durations, "profile"),
		setupFailures: counter("sandbox_setup_failures_total", "Sandboxes that could not be set up, by the step that failed.", "step"),
		verdicts:      counter("verdicts_total", "Decided verify tasks, by verdict and reason.", "profile", "verdict", "reason"),
		redeliveries:  counter("redeliveries_total", "Tasks received on a delivery after the first.", "profile"),
		deadLetters:   counter("dead_letters_total", "Tasks copied to the dead-letter stream, by reason.", "reason"),
		pullErrors:    counter("pull_errors_total", "Pulls from the task consumer that failed.", "profile"),
		doorbells:     counter("doorbells_total", "Tasks an idle profile without a waiting pull heard published, which preempted a parked pull of another profile for them.", "profile"),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: name, Help: help}, f)
	}
	collectors := []prometheus.Collector{
		gauge("slots", "Sandbox slots of this host (its capacity).", func() float64 { return float64(w.cfg.Capacity) }),
		gauge("slots_busy", "Slots running a task right now.", func() float64 { return float64(w.running.Load()) }),
		gauge("sessions_open", "Sandbox sessions open on this host, each holding a slot.", func() float64 { return float64(w.sessions.Load()) }),
		m.started, m.finished, m.duration, m.queueWait, m.setupFailures, m.verdicts, m.redeliveries, m.deadLetters, m.pullErrors, m.doorbells,
	}
	if wr, ok := w.cfg.Runner.(warmReporter); ok {
		collectors = append(collectors,
			gauge("warm_sandboxes_ready", "Sandboxes built ahead and waiting for a task (a task or session that finds one skips the sandbox's start).",
				func() float64 { return float64(wr.Warm().Ready) }),
			gauge("warm_sandboxes_starting", "Warm sandboxes being built (refills after runs).",
				func() float64 { return float64(wr.Warm().Starting) }))
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("worker config: Metrics: %w", err)
		}
	}
	return m, nil
}

// taskStarted records a task that begins running; published is when the
// task entered the stream (its queue wait ends now).
func (m *metrics) taskStarted(profile string, delivery int, published time.Time) {
	if m == nil {
		return
	}
	m.started.WithLabelValues(profile).Inc()
	if delivery > 1 {
		m.redeliveries.WithLabelValues(profile).Inc()
	}
	if !published.IsZero() {
		m.queueWait.WithLabelValues(profile).Observe(max(time.Since(published), 0).Seconds())
	}
}

// taskFinished records a stored result.
func (m *metrics) taskFinished(profile string, res *messages.Result) {
	if m == nil {
		return
	}
	m.finished.WithLabelValues(profile, string(res.Status)).Inc()
	if !res.StartedAt.IsZero() && !res.FinishedAt.IsZero() {
		m.duration.WithLabelValues(profile).Observe(res.FinishedAt.Sub(res.StartedAt).Seconds())
	}
	if v := res.Verdict; v != nil {
		verdict := "rejected"
		if v.Accepted {
			verdict = "accepted"
		}
		m.verdicts.WithLabelValues(profile, verdict, string(v.Reason)).Inc()
	}
}

// runFailed records a task that could not run here (infrastructure).
func (m *metrics) runFailed(err error) {
	if m == nil {
		return
	}
	var setup *sandbox.SetupError
	if errors.As(err, &setup) {
		m.setupFailures.WithLabelValues(setup.Step).Inc()
	}
}

func (m *metrics) deadLettered(reason string) {
	if m == nil {
		return
	}
	m.deadLetters.WithLabelValues(reason).Inc()
}

func (m *metrics) doorbellRang(profile string) {
	if m == nil {
		return
	}
	m.doorbells.WithLabelValues(profile).Inc()
}

func (m *metrics) pullFailed(profile string) {
	if m == nil {
		return
	}
	m.pullErrors.WithLabelValues(profile).Inc()
}
