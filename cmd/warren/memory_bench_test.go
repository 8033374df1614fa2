package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
)

// BenchmarkWorkerMemory reports the resident memory of `warren worker
// --capacity 64` (the real binary, the production sandbox, one warm
// sandbox per slot) idle and with all 64 slots running `sleep`, apart
// from its sandboxes' (the warm inits and the tasks, each its own
// process), and of `warren broker` idle and with 10,000 tasks queued
// (no worker serving their profile). Issue 14's goal: worker <= 100 MB.
func BenchmarkWorkerMemory(b *testing.B) {
	warren, env := buildWarren(b)
	port := brokertest.FreePorts(b, 1)[0]
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	broker := startProcess(b, withEnv(exec.Command(warren, "broker", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--cluster-listen", "127.0.0.1:0"), env), "listening")
	env = append(env, "WARREN_NATS_URL="+url)
	brokerIdle := rssKB(b, broker.Process.Pid)

	// 10,000 tasks queued for a profile nobody serves.
	queued := writeTasks(b, 10000, `{"id":"q%d","kind":"exec","profile":"nobody","argv":["/bin/true"]}`)
	out, err := withEnv(exec.Command(warren, "submit", "--queue-unserved", "--batch", "queued", queued), env).CombinedOutput()
	require.NoError(b, err, "%s", out)
	brokerQueued := rssKB(b, broker.Process.Pid)

	// 64 homes at the default 1 GiB disk limit exceed this host's memory
	// (homes are tmpfs: the worker refuses to start); 256 MiB each fits.
	worker := startProcess(b, withEnv(exec.Command(warren, "worker", "--capacity", "64", "--disk", "256M", "--log-level", "info"), env), "worker started")
	// The warm pool fills in the background: one init per slot.
	for end := time.Now().Add(30 * time.Second); len(descendants(worker.Process.Pid)) < 64 && time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
	}
	warm, warmPSS := len(descendants(worker.Process.Pid)), descendantsKB(worker.Process.Pid, pssKB)
	var idle, busy, sandboxes, peakBusy, peakSandboxes, peakProcs int
	for round := 0; b.Loop(); round++ {
		idle = rssKB(b, worker.Process.Pid)
		batch := writeTasks(b, 64, `{"id":"s%d","kind":"exec","argv":["/bin/sleep","3"]}`)
		out, err := withEnv(exec.Command(warren, "submit", "--batch", fmt.Sprintf("sleep%d", round), batch), env).CombinedOutput()
		require.NoError(b, err, "%s", out)
		// Sample while the batch runs (3s per task, all 64 at once).
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			busy, sandboxes = rssKB(b, worker.Process.Pid), descendantsKB(worker.Process.Pid, pssKB)
			peakBusy, peakSandboxes = max(peakBusy, busy), max(peakSandboxes, sandboxes)
			peakProcs = max(peakProcs, len(descendants(worker.Process.Pid)))
		}
		out, err = withEnv(exec.Command(warren, "results", fmt.Sprintf("sleep%d", round)), env).CombinedOutput()
		require.NoError(b, err, "%s", out)
	}
	b.Logf("worker --capacity 64: %d MB idle, %d MB peak with 64 tasks running; its sandboxes (proportional set, shared pages split): %d MB for %d warm inits, %d MB peak for %d processes; broker: %d MB idle, %d MB with 10,000 tasks queued",
		idle>>10, peakBusy>>10, warmPSS>>10, warm, peakSandboxes>>10, peakProcs, brokerIdle>>10, brokerQueued>>10)
	b.ReportMetric(float64(idle)/1024, "worker_idle_MB")
	b.ReportMetric(float64(peakBusy)/1024, "worker_busy_MB")
	b.ReportMetric(float64(peakSandboxes)/1024, "sandboxes_pss_MB")
	b.ReportMetric(float64(brokerIdle)/1024, "broker_idle_MB")
	b.ReportMetric(float64(brokerQueued)/1024, "broker_10k_queued_MB")
}

// writeTasks writes n JSONL tasks made from format (with %d the index).
func writeTasks(b *testing.B, n int, format string) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, format+"\n", i)
	}
	p := filepath.Join(b.TempDir(), "batch.jsonl")
	require.NoError(b, os.WriteFile(p, []byte(sb.String()), 0o644))
	return p
}

// rssKB is a process's resident set (VmRSS) in KiB.
func rssKB(b *testing.B, pid int) int {
	kb, err := procRSSKB(pid)
	require.NoError(b, err)
	return kb
}

func procRSSKB(pid int) (int, error) { return procField(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:") }

// pssKB is a process's proportional set size in KiB: pages shared with
// other processes (the init binary's) counted by share.
func pssKB(pid int) (int, error) { return procField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:") }

// procField reads a "Name:   123 kB" line of a /proc file; 0 when absent
// (a zombie has none).
func procField(path, name string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, nil
}

// descendantsKB sums size over pid's descendants.
func descendantsKB(pid int, size func(int) (int, error)) int {
	sum := 0
	for _, p := range descendants(pid) {
		kb, _ := size(p)
		sum += kb
	}
	return sum
}

// descendants lists pid's descendant processes, from /proc.
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 {
			if ppid, err := strconv.Atoi(fields[1]); err == nil {
				children[ppid] = append(children[ppid], p)
			}
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
