package sandbox

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/initproc"
)

// TestLimitOverrunsSayWhichLimit: a CPU-time overrun ends timed out with
// Timeout "cpu" in every mode, even where the command is pid 1 of its pid
// namespace and ignores SIGXCPU (it is then SIGKILLed a second later, and
// its own CPU time shows it was the limit); a wall overrun says "wall";
// the control, within both limits, has no timeout.
func TestLimitOverrunsSayWhichLimit(t *testing.T) {
	for _, m := range runModes() {
		t.Run(m.name, func(t *testing.T) {
			r, iso := m.runner(t)
			o := modeRun(t, r, iso, Spec{Argv: sh("echo ok"), Limits: Limits{CPU: time.Second}})
			require.Equal(t, 0, o.res.ExitCode)
			require.False(t, o.res.TimedOut, "control")
			require.Empty(t, o.res.Timeout, "control")

			o = modeRun(t, r, iso, Spec{Argv: sh("while :; do :; done"), Limits: Limits{CPU: time.Second, Wall: 20 * time.Second}})
			require.True(t, o.res.TimedOut, "%+v", o.res)
			require.Equal(t, TimeoutCPU, o.res.Timeout, "%+v", o.res)
			// The kernel counts RLIMIT_CPU on the process's tick-sampled CPU
			// clock; the result's CPU is rusage, the scheduler's runtime. On
			// a loaded VM the two part: when SIGXCPU comes, the rusage CPU
			// can be well short of the limit (unloaded, they agree). The
			// bound says the run was CPU-bound (a sleep's CPU is ~0), which
			// Timeout "cpu" above already decided from the signal.
			require.Greater(t, o.res.CPU, 500*time.Millisecond)
			require.Less(t, o.res.Wall, 15*time.Second, "ended by the CPU limit, not the wall limit")

			o = modeRun(t, r, iso, Spec{Argv: sh("sleep 30"), Limits: Limits{CPU: time.Second, Wall: 300 * time.Millisecond}})
			require.True(t, o.res.TimedOut, "%+v", o.res)
			require.Equal(t, TimeoutWall, o.res.Timeout, "%+v", o.res)
		})
	}
}

// TestOOMKillsInsideTheRunAreCounted: a command whose child is OOM-killed
// and which then exits 0 reports the kill (OOMKills) where the run has a
// cgroup; without one the child's allocation is refused by RLIMIT_AS
// instead and nothing is killed (OOMKills 0, as documented). The control
// child stays within the limit: no kill.
func TestOOMKillsInsideTheRunAreCounted(t *testing.T) {
	child := func(mb int) []string {
		return py(`
import subprocess, sys
p = subprocess.run([sys.executable, "-c", "b = bytearray(` + strconv.Itoa(mb) + ` << 20); b[::4096] = b'x' * len(b[::4096]); print('allocated')"], capture_output=True, text=True)
print("child", p.returncode, p.stdout.strip(), "MemoryError" if "MemoryError" in p.stderr else "")
`)
	}
	for _, m := range runModes() {
		t.Run(m.name, func(t *testing.T) {
			r, iso := m.runner(t)
			r.setupHost()
			o := modeRun(t, r, iso, Spec{Argv: child(16), Limits: Limits{Memory: 256 << 20}})
			require.Equal(t, 0, o.res.ExitCode, o.stderr)
			require.Equal(t, "child 0 allocated \n", o.stdout, "control")
			require.Zero(t, o.res.OOMKills, "control")

			o = modeRun(t, r, iso, Spec{Argv: child(1024), Limits: Limits{Memory: 256 << 20}})
			require.Equal(t, 0, o.res.ExitCode, "the command itself exits 0: %+v\nstdout: %s\nstderr: %s", o.res, o.stdout, o.stderr)
			if r.cgroups.Version != 0 {
				require.Equal(t, "child -9  \n", o.stdout)
				require.GreaterOrEqual(t, o.res.OOMKills, 1, "the child's OOM kill is counted")
			} else {
				require.Equal(t, "child 1  MemoryError\n", o.stdout)
				require.Zero(t, o.res.OOMKills)
			}
		})
	}
}

func TestStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
	}{
		{"plain", "42 (sh) R 1 42 42 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 1 0 1000 2000000 100 18446744073709551615", 1750 * time.Millisecond},
		{"name with spaces and parentheses", "42 (a) b (c) R 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0", 100 * time.Millisecond},
		{"truncated", "42 (sh) R 1 42", 0},
		{"garbage", "no parenthesis", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, initproc.StatCPU([]byte(tc.stat)))
		})
	}
}

func TestCPULimitEnded(t *testing.T) {
	require.True(t, cpuLimitEnded("SIGXCPU", 0, time.Second))
	require.True(t, cpuLimitEnded("SIGKILL", 2*time.Second, 1500*time.Millisecond), "soft limit rounds up to 2 s")
	require.False(t, cpuLimitEnded("SIGKILL", 1900*time.Millisecond, 1500*time.Millisecond), "below the rounded soft limit: another SIGKILL")
	require.False(t, cpuLimitEnded("", 5*time.Second, time.Second), "exited by itself")
	require.False(t, cpuLimitEnded("SIGTERM", 5*time.Second, time.Second))
}
