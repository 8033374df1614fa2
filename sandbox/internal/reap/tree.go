package reap

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Tree walks the processes under a root to stop and kill them all, a
// fork storm included. Killing at once would let a process's children be
// re-parented out of reach before they are found, and a storm fork faster
// than a walk kills; so the tree is stopped first, pass after pass from
// the root down, each process with its process group (a group signal
// reaches a fork in progress too), until a pass finds none it had not
// stopped: a stopped process neither forks nor reaps. Then everything
// found is killed.
//
// Each process is signalled through a pidfd opened while /proc shows
// the parent it was found under as its parent, so a pid reused meanwhile
// is never hit, and a group only through a member so found. The caller
// stops (and kills, last) the root itself.
type Tree struct {
	root int
	// spare says which groups are never signalled as a whole: the
	// root's own while it must live, and any the caller does not own.
	spare  func(pgid int) bool
	procs  map[int]bool // found: stopped (true) or to look at again
	groups map[int]bool
}

// NewTree is a walk of the processes under root.
func NewTree(root int, spare func(pgid int) bool) *Tree {
	return &Tree{root: root, spare: spare, procs: map[int]bool{}, groups: map[int]bool{}}
}

// Stop stops every process under the root and its group, pass after
// pass until a pass finds none new, for d at most.
func (t *Tree) Stop(d time.Duration) { t.walk(unix.SIGSTOP, d) }

// Kill kills every process Stop found and its group, then walks the tree
// again for d at most, killing what the first walk missed.
func (t *Tree) Kill(d time.Duration) {
	for g := range t.groups {
		_ = unix.Kill(-g, unix.SIGKILL)
	}
	for pid, stopped := range t.procs {
		if stopped {
			signal(pid, unix.SIGKILL) // stopped, its parent too: its pid is still its own
		}
	}
	t.procs = map[int]bool{}
	t.walk(unix.SIGKILL, d)
}

// walk signals every process under root, pass after pass until a pass
// finds none it had not signalled, or d has passed.
func (t *Tree) walk(sig unix.Signal, d time.Duration) {
	deadline := time.Now().Add(d)
	for t.pass(sig) && time.Now().Before(deadline) {
	}
}

// pass walks the tree under root once, signals every process not
// signalled yet, and reports whether another pass is needed (it found
// one, or one being re-parented).
func (t *Tree) pass(sig unix.Signal) bool {
	again := false
	queue := []int{t.root}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, pid := range Children(parent) {
			queue = append(queue, pid)
			if !t.procs[pid] {
				again = true
				t.procs[pid] = t.signalChild(pid, parent, sig)
			}
		}
	}
	return again
}

// signalChild sends sig to pid, and to its group the first time the walk
// meets it, if pid is still parent's child; it reports whether it did.
func (t *Tree) signalChild(pid, parent int, sig unix.Signal) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false // gone
	}
	defer unix.Close(fd)
	ppid, pgid, ok := ids(pid)
	if !ok || ppid != parent {
		return false // re-parented: a later pass finds it under its new parent
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	if !t.groups[pgid] && !t.spare(pgid) {
		t.groups[pgid] = true
		_ = unix.Kill(-pgid, sig)
	}
	return true
}

func signal(pid int, sig unix.Signal) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	_ = unix.Close(fd)
}

// Children lists pid's children (every thread's).
func Children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var kids []int
	for _, t := range tids {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids
}

// ids reads pid's parent and process group from /proc/<pid>/stat (the
// fields after the parenthesised command name, which may hold parentheses).
func ids(pid int) (ppid, pgid int, ok bool) {
	f := statFields(pid)
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	return ppid, pgid, err1 == nil && err2 == nil
}

// statFields are the fields of /proc/<pid>/stat after the command's name
// (state, ppid, pgrp, session, ...); nil when it cannot be read.
func statFields(pid int) [][]byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(b[i+1:])
}

// Group is pid's process group (0 when it cannot be read).
func Group(pid int) int {
	_, pgid, _ := ids(pid)
	return pgid
}

// Session is pid's session (0 when it cannot be read).
func Session(pid int) int {
	f := statFields(pid)
	if len(f) < 4 {
		return 0
	}
	sid, err := strconv.Atoi(string(f[3]))
	if err != nil {
		return 0
	}
	return sid
}
