package worker

import (
	"cmp"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// Default ceilings (Config.Ceilings) other than memory and disk.
const (
	defaultMaxTime      = 24 * time.Hour
	defaultMaxProcesses = 4096
	defaultMaxOpenFiles = 65536
	defaultMaxOutput    = 64 << 20
)

// withDefaultCeilings fills the zero ceilings: wall and CPU time 24 h,
// memory half the host's RAM (at least the sandbox's default limit),
// processes 4096, open files 65536, output 64 MiB a stream, and disk
// DiskBytes (when positive). File size has no ceiling of its own: the
// disk limit bounds it.
func withDefaultCeilings(c messages.Limits, disk int64) messages.Limits {
	ms := defaultMaxTime.Milliseconds()
	c.WallTimeoutMS = cmp.Or(c.WallTimeoutMS, ms)
	c.CPUTimeMS = cmp.Or(c.CPUTimeMS, ms)
	c.MemoryBytes = cmp.Or(c.MemoryBytes, defaultMaxMemory())
	c.Processes = cmp.Or(c.Processes, defaultMaxProcesses)
	c.OpenFiles = cmp.Or(c.OpenFiles, defaultMaxOpenFiles)
	c.OutputBytes = cmp.Or(c.OutputBytes, defaultMaxOutput)
	if disk > 0 {
		c.DiskBytes = cmp.Or(c.DiskBytes, disk)
	}
	return c
}

// defaultMaxMemory is half the host's RAM, at least the sandbox's default
// memory limit (a task that sets none must be runnable).
func defaultMaxMemory() int64 {
	floor := sandbox.DefaultLimits.Memory
	m, err := readMeminfo("/proc/meminfo")
	if err != nil {
		return floor
	}
	return max(m["MemTotal"]/2, floor)
}

// overCeiling refuses a task that asks for more than this host allows.
func (w *Worker) overCeiling(t *messages.Task) *messages.Error {
	return t.Limits.Above(w.cfg.Ceilings, "host "+w.cfg.HostID)
}
