package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// e2e is a real broker plus real `warren` processes talking to it.
type e2e struct {
	b       *brokertest.Broker
	dataDir string
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	return &e2e{b: brokertest.Start(t, brokertest.Options{}), dataDir: t.TempDir()}
}

// cmd builds a `warren ARGS...` process against the test broker.
func (e *e2e) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, os.Args[0], args...)
	c.Env = append(os.Environ(), e2eMainEnv+"=1", "WARREN_NATS_URL="+e.b.URL, "WARREN_DATA_DIR="+e.dataDir, "WARREN_LOG_LEVEL=warn")
	return c
}

// run runs warren to completion and returns stdout, stderr and exit code.
func (e *e2e) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return e.runFor(t, 2*time.Minute, args...)
}

// runFor is run with a deadline other than two minutes.
func (e *e2e) runFor(t *testing.T, limit time.Duration, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return runCmd(t, e.cmd(ctx, args...))
}

// startWorker runs `warren worker` as a process until the test ends (then
// SIGTERM: it must drain and exit 0). The queue tests run it without
// isolation; the sandbox packages prove isolation.
func (e *e2e) startWorker(t *testing.T, capacity int, extra ...string) {
	t.Helper()
	e.startWorkerIn(t, []string{"--isolation", "none", "--insecure-no-isolation", "--scratch-root", t.TempDir()}, capacity, extra...)
}

// startSandboxedWorker is startWorker with the default isolation (auto:
// every task and session in a real sandbox), its scratch root in a
// directory a root worker's sandbox uids can pass.
func (e *e2e) startSandboxedWorker(t *testing.T, capacity int, extra ...string) {
	t.Helper()
	e.startWorkerIn(t, []string{"--isolation", "auto", "--scratch-root", sandboxScratch(t)}, capacity, extra...)
}

// sandboxScratch is a scratch root for an isolated worker (t.TempDir's
// parent is 0700, which the sandbox uids of a root worker cannot pass).
func sandboxScratch(t *testing.T) string {
	dir, err := os.MkdirTemp("", "warren-e2e-scratch-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o711))
	t.Cleanup(func() {
		// A worker the test killed (SIGKILL) leaves its homes' tmpfs
		// mounted: the next runner on the root sweeps them, as in
		// production. Left mounted, they would break every later
		// unprivileged bind of their parent (/tmp) with EINVAL.
		r, err := sandbox.New(sandbox.Config{ScratchRoot: dir})
		require.NoError(t, err)
		require.NoError(t, r.Start(context.Background()))
		require.NoError(t, r.Close())
		mi, err := os.ReadFile("/proc/self/mountinfo")
		require.NoError(t, err)
		require.NotContains(t, string(mi), " "+dir+"/", "a home of a dead worker is still mounted under its scratch root")
		require.NoError(t, os.RemoveAll(dir))
	})
	return dir
}

func (e *e2e) startWorkerIn(t *testing.T, isolation []string, capacity int, extra ...string) {
	t.Helper()
	args := append([]string{"worker", "--capacity", fmt.Sprint(capacity), "--host-id", fmt.Sprintf("e2e-%d", time.Now().UnixNano())}, isolation...)
	c := e.cmd(context.Background(), append(args, extra...)...)
	errb := &syncbuf.Buffer{} // the process writes while the test reads
	c.Stderr = errb
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		err := c.Wait()
		require.NoError(t, err, "worker must drain and exit 0 on SIGTERM; stderr:\n%s", errb.String())
	})
	// Ready once it registered in the host registry.
	e.waitRegistered(t, errb.String)
}

// waitRegistered waits until a worker is in the host registry; stderr
// says why not when it fails.
func (e *e2e) waitRegistered(t *testing.T, stderr func() string) {
	t.Helper()
	kv, err := e.b.JS.KeyValue(context.Background(), messages.BucketHosts)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		keys, err := kv.ListKeys(context.Background())
		if err != nil {
			return false
		}
		for range keys.Keys() {
			return true
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "worker did not register: %s", stderr())
}

func (e *e2e) resultCount(t *testing.T, batch string, attempt int) uint64 {
	t.Helper()
	s, err := e.b.JS.Stream(context.Background(), messages.StreamResults)
	require.NoError(t, err)
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(messages.BatchResultFilter(batch, attempt)))
	require.NoError(t, err)
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

func writeBatch(t *testing.T, n int, script func(i int) string) string {
	t.Helper()
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, `{"id":"t%d","kind":"exec","shell":%q}`+"\n", i, script(i))
	}
	p := filepath.Join(t.TempDir(), "batch.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(sb.String()), 0o644))
	return p
}

func parseResults(t *testing.T, out string) map[string]*messages.Result {
	t.Helper()
	got := map[string]*messages.Result{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		r, err := messages.DecodeResult(sc.Bytes())
		require.NoError(t, err, sc.Text())
		_, dup := got[r.TaskID]
		require.False(t, dup, "result printed twice for %s", r.TaskID)
		got[r.TaskID] = r
	}
	return got
}

func TestE2ESchedulerKilledThenResultsThenReplay(t *testing.T) {
	e := newE2E(t)
	e.startWorker(t, 3)
	const n = 30
	file := writeBatch(t, n, func(i int) string { return fmt.Sprintf("sleep 0.1; echo task-%d", i) })

	// The scheduler publishes and waits; kill it mid-batch.
	sub := e.cmd(context.Background(), "submit", file, "--batch", "kb", "--wait")
	require.NoError(t, sub.Start())
	require.Eventually(t, func() bool { return e.resultCount(t, "kb", 1) >= 3 }, time.Minute, 10*time.Millisecond)
	require.NoError(t, sub.Process.Signal(syscall.SIGKILL))
	_ = sub.Wait()

	// Re-attach: every result, once each.
	out, stderr, code := e.run(t, "results", "kb")
	require.Equal(t, 0, code, stderr)
	got := parseResults(t, out)
	require.Len(t, got, n)
	for i := range n {
		r := got[fmt.Sprintf("t%d", i)]
		require.NotNil(t, r)
		require.Equal(t, messages.StatusOK, r.Status)
		require.Equal(t, fmt.Sprintf("task-%d\n", i), string(r.Stdout))
		require.Equal(t, 1, r.Attempt)
	}

	// Replay the finished batch: a new attempt, results kept apart.
	out, stderr, code = e.run(t, "replay", "kb")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out+stderr, "2")
	out, stderr, code = e.run(t, "results", "kb", "--attempt", "2")
	require.Equal(t, 0, code, stderr)
	again := parseResults(t, out)
	require.Len(t, again, n)
	for _, r := range again {
		require.Equal(t, 2, r.Attempt)
		require.Equal(t, messages.StatusOK, r.Status)
	}
	require.EqualValues(t, n, e.resultCount(t, "kb", 1), "attempt 1 untouched")
	require.EqualValues(t, n, e.resultCount(t, "kb", 2))
}

func TestE2ECancelRunningAndQueuedThenReplayRuns(t *testing.T) {
	e := newE2E(t)
	e.startWorker(t, 2)
	// Each task blocks until the flag exists (the queue tests run without
	// isolation, so it is visible), letting the replay finish at once.
	flag := filepath.Join(t.TempDir(), "go")
	file := writeBatch(t, 6, func(int) string { return fmt.Sprintf("test -e %s && exit 0; sleep 60", flag) })
	out, stderr, code := e.run(t, "submit", file, "--batch", "cx")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "cx")
	// Two running (held by the worker's two slots), four queued.
	cons, err := e.b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName("default", "default"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ci, err := cons.Info(context.Background())
		return err == nil && ci.NumAckPending == 2
	}, 30*time.Second, 10*time.Millisecond)

	start := time.Now()
	_, stderr, code = e.run(t, "cancel", "cx")
	require.Equal(t, 0, code, stderr)
	out, stderr, code = e.run(t, "results", "cx")
	require.Equal(t, exitNotRun, code, "cancelled tasks did not run to an outcome: %s", stderr)
	require.Contains(t, stderr, "did not run to an outcome (cancelled 6)")
	got := parseResults(t, out)
	require.Len(t, got, 6)
	for id, r := range got {
		require.Equal(t, messages.StatusCancelled, r.Status, id)
	}
	require.Less(t, time.Since(start), 30*time.Second, "running sandboxes were killed, not waited for")

	// A replay is a new attempt: the cancel does not apply to it.
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	_, stderr, code = e.run(t, "replay", "cx")
	require.Equal(t, 0, code, stderr)
	out, stderr, code = e.run(t, "results", "cx", "--attempt", "2")
	require.Equal(t, 0, code, stderr)
	replayed := parseResults(t, out)
	require.Len(t, replayed, 6)
	for id, r := range replayed {
		require.Equal(t, messages.StatusOK, r.Status, id)
	}
}

func TestE2EExecStreamsAndReturnsExitCode(t *testing.T) {
	e := newE2E(t)
	e.startWorker(t, 1)
	out, stderr, code := e.run(t, "exec", "--", "sh", "-c", "echo out; echo err >&2; exit 5")
	require.Equal(t, 5, code, stderr)
	require.Equal(t, "out\n", out)
	require.Contains(t, stderr, "err\n")
}

func TestE2EWorkerRefusesNoIsolationWithoutInsecureFlag(t *testing.T) {
	e := newE2E(t)
	_, stderr, code := e.run(t, "worker", "--isolation", "none")
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "--insecure-no-isolation")
}

func TestE2EFirstSignalDrainsSecondCancels(t *testing.T) {
	e := newE2E(t)
	c := e.cmd(context.Background(), "worker", "--capacity", "1", "--isolation", "none", "--insecure-no-isolation", "--scratch-root", t.TempDir())
	var errb bytes.Buffer
	c.Stderr = &errb
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Process.Kill() })
	// The task marks that it runs (visible: no isolation here). Delivered
	// is not enough: a task delivered but not yet started when the first
	// signal lands is handed back, not run.
	running := filepath.Join(t.TempDir(), "running")
	file := writeBatch(t, 1, func(int) string { return fmt.Sprintf("touch %s; sleep 60", running) })
	// The worker may not have registered yet: queue regardless.
	_, stderr, code := e.run(t, "submit", file, "--batch", "sig", "--queue-unserved")
	require.Equal(t, 0, code, stderr)
	require.Eventually(t, func() bool {
		_, err := os.Stat(running)
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	cons, err := e.b.JS.Consumer(context.Background(), messages.StreamTasks, messages.ConsumerName("default", "default"))
	require.NoError(t, err)

	exited := make(chan error, 1)
	require.NoError(t, c.Process.Signal(syscall.SIGTERM))
	go func() { exited <- c.Wait() }()
	// Draining: the running task keeps the worker alive.
	select {
	case err := <-exited:
		t.Fatalf("worker exited on the first signal with a task running: %v\n%s", err, errb.String())
	case <-time.After(time.Second):
	}
	require.NoError(t, c.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit 0 after the second signal: %s", errb.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the second signal did not cancel the running task")
	}
	// The cancelled task went back to the queue, not into RESULTS.
	require.Zero(t, e.resultCount(t, "sig", 1))
	ci, err := cons.Info(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, ci.NumPending+uint64(ci.NumAckPending)+uint64(ci.NumRedelivered), "the task is available for another worker")
}

// A `submit --wait` pipeline survives a broker restart in the middle of
// its publication (the broker goes down as soon as the manifest is written,
// before the first task is acknowledged): every task is stored exactly
// once, the worker runs them all, and submit exits 0 with every result.
func TestE2ESubmitWaitRidesThroughBrokerRestart(t *testing.T) {
	e := newE2E(t)
	e.startWorker(t, 2)
	const n = 300
	file := writeBatch(t, n, func(i int) string { return fmt.Sprintf("echo task-%d", i) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kv, err := e.b.JS.KeyValue(ctx, messages.BucketBatches)
	require.NoError(t, err)
	w, err := kv.Watch(ctx, "rr", jetstream.UpdatesOnly())
	require.NoError(t, err)
	defer func() { _ = w.Stop() }()
	// One task in flight at a time: the publication lasts hundreds of round
	// trips, so the restart lands inside it.
	sub := e.cmd(ctx, "submit", file, "--batch", "rr", "--wait", "--max-inflight", "1")
	var out, errb bytes.Buffer
	sub.Stdout, sub.Stderr = &out, &errb
	require.NoError(t, sub.Start())
	for entry := range w.Updates() {
		if entry != nil {
			break // the manifest exists: publishing starts now
		}
	}
	require.Less(t, e.resultCount(t, "rr", 1)+e.taskCount(t, "rr"), uint64(n), "the publication ended before the restart: the test proves nothing")
	e.b.Restart(t, brokertest.Options{})
	require.NoError(t, sub.Wait(), "stderr:\n%s", errb.String())
	got := parseResults(t, out.String())
	require.Len(t, got, n)
	for i := range n {
		r := got[fmt.Sprintf("t%d", i)]
		require.NotNil(t, r)
		require.Equal(t, messages.StatusOK, r.Status)
		require.Equal(t, fmt.Sprintf("task-%d\n", i), string(r.Stdout))
	}
	require.EqualValues(t, n, e.taskCount(t, "rr"), "every task stored exactly once")
}

func (e *e2e) taskCount(t *testing.T, batch string) uint64 {
	t.Helper()
	s, err := e.b.JS.Stream(context.Background(), messages.StreamTasks)
	require.NoError(t, err)
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(messages.BatchTaskFilter(batch)))
	require.NoError(t, err)
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// The broker goes away mid-publication and stays away past --retry-for:
// submit exits 1 with a resume hint; once the broker is back, the same
// command resumes, and every task is stored exactly once.
func TestE2ESubmitGivesUpAfterRetryForThenResumes(t *testing.T) {
	e := newE2E(t)
	const n = 300
	file := writeBatch(t, n, func(i int) string { return fmt.Sprintf("echo task-%d", i) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kv, err := e.b.JS.KeyValue(ctx, messages.BucketBatches)
	require.NoError(t, err)
	w, err := kv.Watch(ctx, "gu", jetstream.UpdatesOnly())
	require.NoError(t, err)
	defer func() { _ = w.Stop() }()
	sub := e.cmd(ctx, "submit", file, "--batch", "gu", "--max-inflight", "1", "--retry-for", "1s", "--queue-unserved")
	var errb bytes.Buffer
	sub.Stderr = &errb
	require.NoError(t, sub.Start())
	for entry := range w.Updates() {
		if entry != nil {
			break
		}
	}
	require.Less(t, e.taskCount(t, "gu"), uint64(n), "the publication ended before the broker went away")
	e.b.Server.Stop()
	err = sub.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr:\n%s", errb.String())
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, errb.String(), "broker unavailable")
	require.Contains(t, errb.String(), "--batch gu` resumes")

	e.b.Restart(t, brokertest.Options{})
	e.startWorker(t, 2)
	out, stderr, code := e.run(t, "submit", file, "--batch", "gu", "--wait")
	require.Equal(t, 0, code, stderr)
	require.Len(t, parseResults(t, out), n)
	require.EqualValues(t, n, e.taskCount(t, "gu"), "every task stored exactly once across the resume")
}
