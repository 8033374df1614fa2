package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// On cgroup v2 an init is cloned straight into its cgroup (CLONE_INTO_CGROUP,
// a CgroupFD on V2Dir). cgroup v1 has no such clone, and moving a process
// in through cgroup.procs takes the kernel's threadgroup lock for writing,
// which waits for an RCU grace period: most of a cold start, longest on a
// host that has been idle. Moving only the calling thread ("0" written to
// a v1 `tasks` file) skips that lock (the kernel needs no threadgroup
// stability for current) and costs a small fraction of that; a child
// cloned by the thread is born in the thread's cgroups. So the launching
// thread (locked to its goroutine: CloneInside's contract) steps into the
// run's cgroups, clones the init there, and steps back.
//
// What keeps this from leaking anything of the worker into a sandbox's
// cgroup:
//   - never from the process's main thread: on v1 the memory a process
//     faults in is charged to the cgroup of its thread-group leader, so
//     the leader must never be inside a run's cgroup (the plain attach is
//     used then);
//   - only where the move back was proven to work (Detect moves a
//     thread into the worker's own cgroups once: v1ThreadMove);
//   - after the step back, each run cgroup's `tasks` must hold the init
//     alone: a thread of this process found there (the Go runtime may
//     clone a new thread from the launching one meanwhile) is moved back
//     with the slow write before anything else happens;
//   - and the sweep never signals this process (sweep.go), moving
//     such a thread back instead.

// v1ThreadMove reports whether the calling thread can be moved into
// parents' `tasks` files, the worker's own v1 cgroups (where it already
// is: the write changes nothing). Needed to step back out of a run's.
func v1ThreadMove(parents map[string]string) bool {
	for _, dir := range parents {
		if err := writeTasks(dir, "0"); err != nil {
			return false
		}
	}
	return true
}

// CloneInside runs start (the init's clone) with the calling thread inside
// cg's v1 cgroups, so that the init is born in them, and reports whether it
// was (false: start ran outside, the init needs its attach). The caller's
// goroutine is locked to its thread.
func (cg *Group) CloneInside(start func() error) (born bool, err error) {
	if cg == nil || cg.version != 1 || !cg.threadMove || unix.Gettid() == os.Getpid() {
		return false, start()
	}
	var entered []string
	back := func() error {
		var errs []error
		for _, ctrl := range entered {
			if err := writeTasks(cg.parents[ctrl], "0"); err != nil {
				errs = append(errs, fmt.Errorf("moving the launching thread back to %s: %w", cg.parents[ctrl], err))
			}
		}
		return errors.Join(errs...)
	}
	for ctrl, dir := range cg.dirs {
		if err := writeTasks(dir, "0"); err != nil {
			if err := back(); err != nil {
				return false, err
			}
			return false, start()
		}
		entered = append(entered, ctrl)
	}
	err = start()
	if berr := back(); berr != nil {
		return false, errors.Join(err, berr)
	}
	if serr := cg.evictOwnThreads(); serr != nil {
		return false, errors.Join(err, serr)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// evictOwnThreads moves every thread of this process found in cg's v1
// cgroups back to the worker's own (the slow write: by tid).
func (cg *Group) evictOwnThreads() error {
	if cg == nil || cg.version != 1 {
		return nil
	}
	var errs []error
	for ctrl, dir := range cg.dirs {
		b, err := os.ReadFile(filepath.Join(dir, "tasks"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for f := range bytes.FieldsSeq(b) {
			tid := string(f)
			if _, err := os.Lstat("/proc/self/task/" + tid); err != nil {
				continue // not ours: the init (or its task)
			}
			if err := writeTasks(cg.parents[ctrl], tid); err != nil {
				errs = append(errs, fmt.Errorf("moving worker thread %s out of %s: %w", tid, dir, err))
			}
		}
	}
	return errors.Join(errs...)
}

func writeTasks(dir, tid string) error {
	return os.WriteFile(filepath.Join(dir, "tasks"), []byte(tid), 0)
}
