package sandbox

import (
	"slices"
	"time"

	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"golang.org/x/sys/unix"
)

// rlimits are the command's rlimits, set by the init just before execve.
// Memory is bounded by the run's cgroup where the runner has cgroups (the
// whole tree, resident memory): RLIMIT_AS is then left alone, since it
// would also cap address space that runtimes reserve without using (a Go
// program reserves ~1 GB at start). Without cgroups RLIMIT_AS is the only
// memory bound.
func rlimits(l Limits, cgroups cgroup.Support) []initRlimit {
	rl := limitsToRlimits(l)
	if cgroups.Version == 0 {
		return rl
	}
	return slices.DeleteFunc(rl, func(x initRlimit) bool { return x.Resource == unix.RLIMIT_AS })
}

// cpuSeconds is the CPU limit as RLIMIT_CPU's soft limit: whole seconds,
// rounded up.
func cpuSeconds(d time.Duration) uint64 { return uint64((d + time.Second - 1) / time.Second) }

func limitsToRlimits(l Limits) []initRlimit {
	cpu := cpuSeconds(l.CPU)
	return []initRlimit{
		{Resource: unix.RLIMIT_AS, Cur: uint64(l.Memory), Max: uint64(l.Memory)},
		{Resource: unix.RLIMIT_NPROC, Cur: uint64(l.Processes), Max: uint64(l.Processes)},
		{Resource: unix.RLIMIT_NOFILE, Cur: uint64(l.OpenFiles), Max: uint64(l.OpenFiles)},
		{Resource: unix.RLIMIT_FSIZE, Cur: uint64(l.FileSize), Max: uint64(l.FileSize)},
		// SIGXCPU at the limit, SIGKILL a second later.
		{Resource: unix.RLIMIT_CPU, Cur: cpu, Max: cpu + 1},
		{Resource: unix.RLIMIT_SIGPENDING, Cur: pendingSignals, Max: pendingSignals},
	}
}

// pendingSignals is every run's RLIMIT_SIGPENDING: the signals queued and
// not yet taken (kill, sigqueue, timers) are counted per user, by default
// up to tens of thousands, so one sandbox could queue them all and make
// every queued signal of another sandbox of that user, or of the host
// user, fail with EAGAIN. With its own user namespace (the namespace
// mode) a run's count is its own, bounded by this; the host user's count
// holds all its runs', at most capacity × pendingSignals (POSIX asks for
// 32 at least).
const pendingSignals = 1024
