package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/warrenhq/warren/sandbox/internal/cgroup"
	"golang.org/x/sys/unix"
)

// ErrRunEnded means the run a Handle observes is over (its command was
// reaped): there is nothing left to measure.
var ErrRunEnded = errors.New("sandbox: the run has ended")

// Handle observes a running sandbox (Spec.Started hands it out once the
// command runs). It is safe for concurrent use and may outlive the run:
// its methods then return an error wrapping ErrRunEnded.
type Handle interface {
	// Memory is the memory the run holds that only its end gives back, in
	// bytes: anonymous memory (heaps, stacks), tmpfs and shared-memory
	// pages, and swap. Page cache and mapped files (a toolchain's
	// mmapped libraries or .olean files: shared and reclaimable) are not
	// counted. It is read from the run's cgroup when it has one (v1
	// memory.stat total_rss + total_shmem + total_swap; v2 memory.stat
	// anon + shmem, plus memory.swap.current), else summed over the
	// command and its descendants from /proc/<pid>/status (RssAnon +
	// RssShmem + VmSwap; a process that left the tree by re-parenting is
	// not counted, and shared pages count once per process mapping them).
	Memory() (int64, error)
}

// runHandle is the Handle of one run: the command's host pid, pinned by a
// pidfd so a reused pid is never measured, and the run's cgroup (nil when
// limits are rlimits only).
type runHandle struct {
	pid int
	cg  *cgroup.Group

	mu      sync.RWMutex
	pidfd   int   // -1 when ended or never opened
	openErr error // why there is no pidfd (then nothing is measured)
	ended   bool
}

// observeRun hands spec.Started a Handle on the command pid (just exec'd)
// and returns the function that ends it, called once the command is
// reaped. Without a Started hook it does nothing.
func observeRun(spec Spec, pid int, cg *cgroup.Group) (ended func()) {
	if spec.Started == nil {
		return func() {}
	}
	h := &runHandle{pid: pid, cg: cg, pidfd: -1}
	// Without a pidfd (only fd exhaustion fails it for an unreaped child
	// on Linux >= 5.3) nothing is measured rather than risk reading a
	// reused pid.
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		h.openErr = fmt.Errorf("pidfd_open: %w", err)
	} else {
		h.pidfd = fd
	}
	spec.Started(h)
	return h.end
}

func (h *runHandle) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	if h.pidfd >= 0 {
		_ = unix.Close(h.pidfd)
		h.pidfd = -1
	}
}

func (h *runHandle) Memory() (int64, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	switch {
	case h.ended:
		return 0, fmt.Errorf("%w: pid %d", ErrRunEnded, h.pid)
	case h.pidfd < 0:
		return 0, fmt.Errorf("sandbox: memory of run (pid %d): %w", h.pid, h.openErr)
	}
	var n int64
	var err error
	if h.cg != nil {
		n, err = h.cg.Memory()
	} else {
		n, err = treeMemory(h.pid)
	}
	// Read first, then check the command was not reaped meanwhile: a
	// reading taken while it lived was of this run (a zombie keeps its pid).
	if serr := unix.PidfdSendSignal(h.pidfd, 0, nil, 0); errors.Is(serr, unix.ESRCH) {
		return 0, fmt.Errorf("%w: pid %d", ErrRunEnded, h.pid)
	}
	if err != nil {
		return 0, fmt.Errorf("sandbox: memory of run (pid %d): %w", h.pid, err)
	}
	return n, nil
}

// sumFields adds the values of the lines of b whose first field (split
// on sep) is one of keys, each multiplied by unit. A malformed value is an
// error.
func sumFields(b []byte, sep string, unit int64, keys ...string) (int64, error) {
	var n int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if !ok || !slices.Contains(keys, k) {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", k, v, err)
		}
		n += x * unit
	}
	return n, sc.Err()
}

// treeMemory sums RssAnon + RssShmem + VmSwap over pid and its
// descendants (children of every thread, /proc/<pid>/task/*/children).
// Processes that exit during the walk are skipped; the root must be
// readable.
func treeMemory(root int) (int64, error) {
	var total int64
	seen := map[int]bool{}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		n, err := procMemory(pid)
		if err != nil {
			if pid == root {
				return 0, err
			}
			continue // exited meanwhile
		}
		total += n
		queue = append(queue, procChildren(pid)...)
	}
	return total, nil
}

// procMemory is one process's RssAnon + RssShmem + VmSwap in bytes (0 for
// a zombie, whose status has no memory lines).
func procMemory(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	return sumFields(b, ":", 1024, "RssAnon", "RssShmem", "VmSwap")
}

// procChildren lists the children of every thread of pid (none when it is
// gone).
func procChildren(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var kids []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids
}
