package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// TestCeilings: the worker publishes its ceilings in the registry, and a
// task above one (memory, wall time, processes) is answered invalid with
// over_ceiling naming the limit, never run; the controls at the ceilings
// run.
func TestCeilings(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ceil := messages.Limits{MemoryBytes: 3 << 30, WallTimeoutMS: 60_000, Processes: 100}
	startWorker(t, b, "ceil", workerOpts{ceilings: ceil})

	var h messages.HostInfo
	require.Eventually(t, func() (ok bool) { h, ok = hostEntry(t, b, "default.ceil"); return ok }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, ceil.MemoryBytes, h.Ceilings.MemoryBytes)
	require.Equal(t, ceil.WallTimeoutMS, h.Ceilings.WallTimeoutMS)
	require.EqualValues(t, 24*3600*1000, h.Ceilings.CPUTimeMS, "an unset ceiling takes the default")

	tasks := []messages.Task{
		execTask("cl", "mem", "echo", "ran"), execTask("cl", "wall", "echo", "ran"), execTask("cl", "procs", "echo", "ran"),
		execTask("cl", "fits", "echo", "ran"),
	}
	tasks[0].Limits.MemoryBytes = 1 << 40
	tasks[1].Limits.WallTimeoutMS = 61_000
	tasks[2].Limits.Processes = 101
	tasks[3].Limits = ceil
	publish(t, b.JS, tasks...)
	got := collect(t, b.JS, "cl", len(tasks), 30*time.Second)
	for id, field := range map[string]string{"mem": "limits.memory_bytes", "wall": "limits.wall_timeout_ms", "procs": "limits.processes"} {
		require.Equal(t, messages.StatusInvalid, got[id].Status, id)
		require.Equal(t, messages.CodeOverCeiling, got[id].Error.Code, id)
		require.Equal(t, field, got[id].Error.Field, id)
		require.Empty(t, got[id].Stdout, "%s never ran", id)
	}
	require.Contains(t, got["mem"].Error.Msg, "1T is above the ceiling of host ceil, 3G")
	require.Equal(t, messages.StatusOK, got["fits"].Status)
	require.Equal(t, "ran\n", string(got["fits"].Stdout))
}
