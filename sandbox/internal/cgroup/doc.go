// Package cgroup is a sandbox run's cgroup: the memory and pids limits
// that bound a run's whole process tree, the counters read from it (peak
// memory, OOM kills, memory held now), and the processes in it, which is
// every process of the run.
//
// # Model
//
// [Detect] finds the interface this process can use ([Support]: cgroup
// v1 with the memory and pids controllers, v2 with both enabled for the
// children of the worker's own cgroup, or none and why). [Support.Create]
// makes a run's [Group] under the worker's own cgroup (so limits set on
// the worker still bound its sandboxes); v1 and v2 differ only inside
// it. The init is born in the group where the kernel allows it (v2: a
// CgroupFD on [Group.V2Dir]; v1: [Group.CloneInside], v1_born.go), else
// moved in by [Group.Attach] before its task runs. A group can serve
// task after task ([Group.BeginTask] resets its counters per task,
// [Group.HoldsOnly] checks it between tasks). [Group.Sweep] kills what
// is in it until it is empty, [Group.Remove] deletes it.
//
// # Failure handling
//
// Errors are plain (os errors, or a message naming the cgroup file or
// directory); the caller wraps them with its step. A nil *Group is a run
// without a cgroup: its setters, counters and Remove do nothing. Counters
// that cannot be read are 0 (PeakMemory, OOMKills). Remove waits briefly
// for exiting tasks; Sweep gives up after a second and names what
// survived.
//
// # Limits
//
// Only the memory and pids controllers are used. Without swap accounting
// swap is not bounded by the group. On v1 a thread of the worker may be
// found in a run's cgroup in CloneInside's window: it is moved out, never
// signalled (v1_born.go).
package cgroup
