package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// procsFile is the cgroup.procs of one of the run's cgroup directories:
// every controller's directory holds the same processes (the init is
// attached to all of them and children inherit), so one is enough.
func (cg *Group) procsFile() string {
	for _, ctrl := range []string{"pids", "", "memory", "cpu"} {
		if dir, ok := cg.dirs[ctrl]; ok {
			return filepath.Join(dir, "cgroup.procs")
		}
	}
	for _, dir := range cg.dirs {
		return filepath.Join(dir, "cgroup.procs")
	}
	return ""
}

// procs lists the processes in the run's cgroup. Exited processes are not
// listed, zombies included: they are dead and hold nothing but a pid.
func (cg *Group) procs() ([]int, error) {
	b, err := os.ReadFile(cg.procsFile())
	if err != nil {
		return nil, err
	}
	var pids []int
	for f := range bytes.FieldsSeq(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil {
			return nil, fmt.Errorf("cgroup.procs: %q: %w", f, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// sweepTimeout bounds Sweep; a run whose cgroup is still busy after
// it is quarantined by its teardown check.
const sweepTimeout = time.Second

// Sweep SIGKILLs every process in the run's cgroup until it is empty.
// Nothing of the run can leave its cgroup (cgroup.procs files are root's
// and outside every sandbox's writable paths), setsid escapees included,
// so an empty cgroup proves the run is gone: one small read instead of a
// /proc scan whose cost grows with every process on the host.
func (cg *Group) Sweep() error {
	deadline := time.Now().Add(sweepTimeout)
	for backoff := 100 * time.Microsecond; ; backoff = min(2*backoff, 20*time.Millisecond) {
		pids, err := cg.KillAll()
		if err != nil || len(pids) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes survive the sweep of cgroup %s: %v", filepath.Dir(cg.procsFile()), pids)
		}
		// A killed process takes a moment to die and leave the cgroup.
		time.Sleep(backoff)
	}
}

// KillAll SIGKILLs, once, every process in the run's cgroup and returns
// the pids it found there (none: the cgroup is empty).
func (cg *Group) KillAll() ([]int, error) {
	pids, err := cg.procs()
	if err != nil {
		return nil, err
	}
	for _, pid := range pids {
		if pid == os.Getpid() {
			// A thread of the worker itself (v1_born.go): moved
			// out, never signalled.
			if err := cg.evictOwnThreads(); err != nil {
				return pids, err
			}
			continue
		}
		cg.kill(pid)
	}
	return pids, nil
}

// kill SIGKILLs pid only if it is still the run's: the pidfd pins the
// process, and the second read of cgroup.procs proves that the process
// behind the pid, if any, is in this cgroup (a pid reused outside it
// since the first read is left alone).
func (cg *Group) kill(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			_ = unix.Kill(pid, unix.SIGKILL) // pre-5.3 kernel: no pidfd
		}
		return
	}
	defer unix.Close(fd)
	pids, err := cg.procs()
	if err != nil {
		return
	}
	for _, p := range pids {
		if p == pid {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			return
		}
	}
}
