package cgroup

import (
	"os"
	"path/filepath"
	"sync"
)

// The counter files a cgroup reads around every task (a slot's serves
// task after task: task.go) are opened once and read again at
// offset 0, where the kernel generates a cgroup file afresh; they close
// with the cgroup. That is an open, a stat and a close fewer per read (a
// slot's task reads five: the OOM kills twice, the peak reset and read,
// the pids count). Never a process list: on cgroup v1 a cgroup.procs or
// tasks descriptor read again serves the list it loaded at its first
// read for up to a second (cgroup-v1.c, CGROUP_PIDLIST_DESTROY_DELAY),
// which would hide a process that appeared since.

// keptFiles are a cgroup's open counter files by path.
type keptFiles struct {
	mu sync.Mutex
	m  map[string]*os.File
}

// keptReadLen bounds a kept read: every counter file is a line or a few.
const keptReadLen = 4096

// file returns the kept descriptor of path, opening it (read and write)
// the first time.
func (k *keptFiles) file(path string) (*os.File, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if f, ok := k.m[path]; ok {
		return f, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		// A read-only counter (memory.events, pids.current).
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
	}
	if k.m == nil {
		k.m = map[string]*os.File{}
	}
	k.m[path] = f
	return f, nil
}

// read reads the cgroup file path (up to keptReadLen bytes).
func (k *keptFiles) read(path string) ([]byte, error) {
	f, err := k.file(path)
	if err != nil {
		return nil, err
	}
	b := make([]byte, keptReadLen)
	n, err := f.ReadAt(b, 0)
	if n > 0 {
		err = nil
	}
	return b[:n], err
}

// write writes v to the cgroup file path.
func (k *keptFiles) write(path, v string) error {
	f, err := k.file(path)
	if err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(v), 0)
	return err
}

// close closes every kept file.
func (k *keptFiles) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, f := range k.m {
		_ = f.Close()
	}
	k.m = nil
}

// keptPath is name in the cgroup's directory of controller ctrl (v2: the
// one directory).
func (cg *Group) keptPath(ctrl, name string) string {
	if cg.version == 2 {
		ctrl = ""
	}
	return filepath.Join(cg.dirs[ctrl], name)
}
