// Package ident is the identity a root worker gives its sandboxes: a
// dedicated host uid (used as gid too) per concurrent run, from a range
// mapped in the worker's user namespace.
//
// # Model
//
// [WorkerRange] reads /proc/self/uid_map and gid_map ([ReadMap]) and
// picks the range ([ChooseRange]): an explicit one must be mapped; else
// [DefaultBase].. where that is mapped, else the top of the ids mapped in
// both maps, skipping reserved ids and ids named in /etc/passwd or
// /etc/group. A [Pool] over that range hands out one uid per run
// ([Pool.Acquire]) and takes it back only once the run's teardown is
// verified ([Pool.Release]); [SharedPool] is the process-wide pool of a
// range, whose uids are also leased host-wide (flocks in [LockDir]) so
// two workers on one host never run sandboxes as the same uid.
// [Processes] and [LivePIDs] find what still runs as a uid, for the
// teardown check and the sweeps.
//
// # Failure handling
//
// A range outside the maps is an error wrapping [ErrRangeUnmapped] that
// names the map and the fix; an empty pool is [ErrPoolExhausted]. A uid
// whose teardown check fails is quarantined for the life of the process,
// its lease kept. Package sandbox re-exports both sentinels and wraps
// these errors in its own (SetupError, config errors).
//
// # Limits
//
// Linux only (/proc, flock). The pool does not look for processes of a
// uid it hands out: only its quarantine and the leases keep a uid back, so
// the range must belong to the sandboxes alone.
package ident
