//go:build !client

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/internal/syncbuf"
	"github.com/warrenhq/warren/messages"
)

// upProc is a `warren up` process on a data dir of the test's.
type upProc struct {
	dataDir, metrics string
	stderr           *syncbuf.Buffer
}

// startUp runs `warren up` on dataDir with metrics until the test ends
// (then SIGTERM: it must exit 0), and waits until its worker is ready.
func startUp(t *testing.T, dataDir string) *upProc {
	t.Helper()
	u := &upProc{dataDir: dataDir, metrics: freeAddr(t), stderr: &syncbuf.Buffer{}}
	c := u.cmd(context.Background(), "up", "--listen", freeAddr(t), "--metrics-listen", u.metrics, "--capacity", "2",
		"--isolation", "none", "--insecure-no-isolation", "--scratch-root", t.TempDir(), "--host-id", "disk-e2e")
	c.Env = append(c.Env, "WARREN_LOG_LEVEL=info")
	c.Stderr = u.stderr
	require.NoError(t, c.Start())
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		require.NoError(t, <-exited, "warren up must exit 0 on SIGTERM; stderr:\n%s", u.stderr.String())
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + u.metrics + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 20*time.Millisecond, "warren up never ready: %s", u.stderr.String())
	return u
}

// cmd is a warren process that finds the broker through the data dir's
// record, as a user's client on the same machine does.
func (u *upProc) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, os.Args[0], args...)
	c.Env = append(os.Environ(), e2eMainEnv+"=1", "WARREN_DATA_DIR="+u.dataDir, "WARREN_LOG_LEVEL=warn")
	return c
}

// metric is the value of a gauge or counter (summed over its series).
func (u *upProc) metric(t *testing.T, name string) float64 {
	t.Helper()
	code, body := httpGet(t, "http://"+u.metrics+"/metrics")
	require.Equal(t, http.StatusOK, code)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewBufferString(body))
	require.NoError(t, err)
	f, ok := fams[name]
	if !ok {
		return 0 // a labelled counter has no series before its first count
	}
	var sum float64
	for _, m := range f.GetMetric() {
		sum += value(m)
	}
	return sum
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

// `warren up`'s data dir fills up while `submit --wait` waits for a
// batch, and is freed again; nobody restarts anything. up warns while the
// disk is low, its metrics show the disk low and the store failed, and
// once space is back the broker restarts by itself: the submit ends with
// every result, and a new batch runs at once, its client finding the
// restarted broker through the data dir's record.
func TestE2EUpRidesAFullDisk(t *testing.T) {
	// The smallest disk whose JetStream storage fits Warren's streams
	// once up has scaled them down to it.
	dir := brokertest.SmallDisk(t, 512<<20)
	up := startUp(t, dir)
	require.Positive(t, up.metric(t, "warren_broker_disk_free_bytes"))
	require.Zero(t, up.metric(t, "warren_broker_disk_low"))

	const n = 100
	file := writeBatch(t, n, func(i int) string { return fmt.Sprintf("sleep 0.05; echo task-%d", i) })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sub := up.cmd(ctx, "submit", file, "--batch", "full", "--wait")
	var out bytes.Buffer
	errb := &syncbuf.Buffer{}
	sub.Stdout, sub.Stderr = &out, errb
	require.NoError(t, sub.Start())
	require.Eventually(t, func() bool { return up.metric(t, "warren_worker_tasks_finished_total") >= 5 }, time.Minute, 20*time.Millisecond,
		"tasks run: %s", errb.String())

	free := brokertest.Fill(t, dir)
	require.Eventually(t, func() bool { return up.metric(t, "warren_broker_store_failed") == 1 }, time.Minute, 20*time.Millisecond)
	require.Less(t, up.metric(t, "warren_worker_tasks_finished_total"), float64(n), "the batch was still running when the disk filled")
	require.Equal(t, 1.0, up.metric(t, "warren_broker_disk_low"))
	require.Contains(t, up.stderr.String(), "almost full")
	require.Contains(t, up.stderr.String(), "JetStream cannot write its store")
	free()

	require.NoError(t, sub.Wait(), "stderr:\n%s", errb.String())
	got := parseResults(t, out.String())
	require.Len(t, got, n)
	for i := range n {
		r := got[fmt.Sprintf("t%d", i)]
		require.NotNil(t, r)
		require.Equal(t, messages.StatusOK, r.Status)
		require.Equal(t, fmt.Sprintf("task-%d\n", i), string(r.Stdout))
	}
	require.Equal(t, 1.0, up.metric(t, "warren_broker_store_restarts_total"))
	require.Zero(t, up.metric(t, "warren_broker_store_failed"))
	require.Zero(t, up.metric(t, "warren_broker_disk_low"))

	after := writeBatch(t, 5, func(i int) string { return fmt.Sprintf("echo after-%d", i) })
	o, e, code := runCmd(t, up.cmd(ctx, "submit", after, "--batch", "after", "--wait"))
	require.Equal(t, 0, code, e)
	require.Len(t, parseResults(t, o), 5)
}
