package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/worker"
)

// diskRunner records the disk limit each run gets and reports the disk
// full when a run asked for less than 1 MiB.
type diskRunner struct {
	mu    sync.Mutex
	disks map[string]int64 // by argv[1]
}

func (d *diskRunner) Run(_ context.Context, s sandbox.Spec) (*sandbox.Result, error) {
	d.mu.Lock()
	d.disks[s.Argv[1]] = s.Limits.Disk
	d.mu.Unlock()
	full := s.Limits.Disk > 0 && s.Limits.Disk < 1<<20
	return &sandbox.Result{ExitCode: 1, DiskFull: full, InForce: "fake"}, nil
}

// TestDiskLimits: a task's limits.disk_bytes reaches the sandbox, zero is
// the worker's default, more than the worker's limit is invalid (the
// control: the limit itself is accepted), and a reached limit is
// disk_full in the result.
func TestDiskLimits(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	r := &diskRunner{disks: map[string]int64{}}
	startWorker(t, b, "disk", workerOpts{runner: r})
	tasks := []messages.Task{execTask("dk", "default", "x", "default"), execTask("dk", "small", "x", "small"), execTask("dk", "max", "x", "max"), execTask("dk", "over", "x", "over")}
	tasks[1].Limits.DiskBytes = 4096
	tasks[2].Limits.DiskBytes = sandbox.DefaultDisk
	tasks[3].Limits.DiskBytes = sandbox.DefaultDisk + 1
	publish(t, b.JS, tasks...)
	got := collect(t, b.JS, "dk", len(tasks), 30*time.Second)

	require.Equal(t, map[string]int64{"default": sandbox.DefaultDisk, "small": 4096, "max": sandbox.DefaultDisk}, r.disks)
	require.True(t, got["small"].DiskFull)
	require.False(t, got["default"].DiskFull)
	require.Equal(t, messages.StatusFailed, got["max"].Status)
	require.Equal(t, messages.StatusInvalid, got["over"].Status)
	require.Equal(t, "limits.disk_bytes", got["over"].Error.Field)
	require.Equal(t, messages.CodeOverCeiling, got["over"].Error.Code)
	require.Contains(t, got["over"].Error.Msg, "ceiling of host disk, 1G")
}

// TestDiskAdmission: a worker whose slots cannot all hold a full home
// (homes are tmpfs) is refused at New, naming the flags; the control with
// room starts.
func TestDiskAdmission(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	nc, _ := b.Dial(t, "adm")
	_, err := worker.New(nc, worker.Config{Runner: &diskRunner{}, Capacity: 4, DiskBytes: 1 << 50})
	require.ErrorContains(t, err, "lower --capacity or --disk")
	_, err = worker.New(nc, worker.Config{Runner: &diskRunner{}, Capacity: 4, DiskBytes: 1 << 20})
	require.NoError(t, err)
}
