package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// A worker process with --metrics-listen serves health checks and
// Prometheus metrics that count the tasks it ran.
func TestWorkerServesMetricsAndHealth(t *testing.T) {
	e := newE2E(t)
	addr := freeAddr(t)
	c := e.cmd(context.Background(), "worker", "--capacity", "2", "--isolation", "none", "--insecure-no-isolation",
		"--scratch-root", t.TempDir(), "--host-id", "metrics-e2e", "--metrics-listen", addr)
	var errb bytes.Buffer
	c.Stderr = &errb
	require.NoError(t, c.Start())
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		require.NoError(t, <-exited, "stderr:\n%s", errb.String())
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "worker never ready: %s", errb.String())
	code, body := httpGet(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	_, body = httpGet(t, base+"/readyz")
	require.Contains(t, body, "ok worker")

	batch := writeBatch(t, 3, func(i int) string { return fmt.Sprintf("exit %d", i%2) })
	// Its exit status is about the tasks, not the metrics: not checked here.
	e.run(t, "submit", batch, "--batch", "metrics", "--wait")
	require.EqualValues(t, 3, e.resultCount(t, "metrics", 1))

	var fams map[string]*dto.MetricFamily
	scrape := func() {
		code, body := httpGet(t, base+"/metrics")
		require.Equal(t, http.StatusOK, code)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		var err error
		fams, err = parser.TextToMetricFamilies(bytes.NewBufferString(body))
		require.NoError(t, err, "the scrape parses as the Prometheus text format")
	}
	value := func(name string, labels map[string]string) float64 {
		f, ok := fams[name]
		require.True(t, ok, "metric %s missing", name)
		var sum float64
		for _, m := range f.GetMetric() {
			if hasAll(m.GetLabel(), labels) {
				if m.Counter != nil {
					sum += m.Counter.GetValue()
				} else if m.Gauge != nil {
					sum += m.Gauge.GetValue()
				}
			}
		}
		return sum
	}
	// A result is counted just after it is stored: poll for the last one.
	require.Eventually(t, func() bool {
		scrape()
		_, ok := fams["warren_worker_tasks_finished_total"]
		return ok && value("warren_worker_tasks_finished_total", nil) == 3
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 2.0, value("warren_worker_tasks_finished_total", map[string]string{"status": "ok"}))
	require.Equal(t, 1.0, value("warren_worker_tasks_finished_total", map[string]string{"status": "failed"}))
	require.Equal(t, 2.0, value("warren_worker_slots", nil))
	require.Contains(t, fams, "go_goroutines", "runtime metrics are served too")
	require.Contains(t, fams, "warren_worker_task_queue_wait_seconds")
}

func hasAll(have []*dto.LabelPair, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range have {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
