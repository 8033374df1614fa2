package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrUIDPoolExhausted means every uid of the configured range is in use or
// quarantined; the command was not run.
var ErrUIDPoolExhausted = errors.New("sandbox: no free sandbox uid (range exhausted or quarantined)")

// uidPool hands out dedicated host uids (used as uid and gid) to runs of a
// root worker. A uid returns to the pool only after its teardown was
// verified; a uid whose teardown failed is quarantined for the life of the
// process, since something of that run may still be alive or on disk.
//
// With a lock directory (every production pool: uidLockDir) a uid is also
// leased host-wide: an flock on <dir>/<uid>, held while the uid is in use
// (and kept on a quarantined uid), released by the kernel if the worker
// dies. Two workers on one host with the same range then never run
// sandboxes as the same uid.
type uidPool struct {
	mu          sync.Mutex
	base, count uint32
	next        uint32
	inUse       map[uint32]bool
	quarantined map[uint32]error
	lockDir     string              // "" leases nothing host-wide (tests)
	lockDirMade bool                // lockDir exists: made once, not per acquire
	leases      map[uint32]*os.File // held flocks, by uid
}

// uidLockDir holds the host-wide uid leases of every worker on the host.
const uidLockDir = "/run/warren/uids"

var (
	poolsMu sync.Mutex
	pools   = map[[2]uint32]*uidPool{}
)

// sharedUIDPool returns the process-wide pool for a range, so that several
// Runners of one worker never hand out the same uid twice.
func sharedUIDPool(base, count uint32) *uidPool {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	k := [2]uint32{base, count}
	if p, ok := pools[k]; ok {
		return p
	}
	p := newUIDPool(base, count)
	p.lockDir = uidLockDir
	pools[k] = p
	return p
}

func newUIDPool(base, count uint32) *uidPool {
	return &uidPool{base: base, count: count, inUse: map[uint32]bool{}, quarantined: map[uint32]error{}, leases: map[uint32]*os.File{}}
}

// acquire returns a free uid, skipping any uid that a host process still
// runs as (a leftover of a previous worker, say).
func (p *uidPool) acquire() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range p.count {
		uid := p.base + p.next
		p.next = (p.next + 1) % p.count
		if p.inUse[uid] || p.quarantined[uid] != nil {
			continue
		}
		ok, err := p.lease(uid)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue // another worker on this host runs as uid
		}
		p.inUse[uid] = true
		return uid, nil
	}
	return 0, ErrUIDPoolExhausted
}

// lease takes uid's host-wide lease; false when another process holds it.
func (p *uidPool) lease(uid uint32) (bool, error) {
	if p.lockDir == "" {
		return true, nil
	}
	if !p.lockDirMade {
		if err := os.MkdirAll(p.lockDir, 0o700); err != nil {
			return false, fmt.Errorf("sandbox uid leases: %w (the worker needs a writable %s)", err, p.lockDir)
		}
		p.lockDirMade = true
	}
	f, err := os.OpenFile(filepath.Join(p.lockDir, strconv.FormatUint(uint64(uid), 10)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, fmt.Errorf("sandbox uid leases: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("sandbox uid leases: flock %s: %w", f.Name(), err)
	}
	p.leases[uid] = f
	return true, nil
}

// release returns uid once verify (the teardown check) passed; otherwise the
// uid is quarantined and the verification error returned.
func (p *uidPool) release(uid uint32, verify func(uid uint32) error) error {
	err := verify(uid)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inUse, uid)
	if err != nil {
		// The lease stays held: no worker on this host gets this uid.
		p.quarantined[uid] = err
		return fmt.Errorf("sandbox uid %d quarantined: %w", uid, err)
	}
	if f := p.leases[uid]; f != nil {
		delete(p.leases, uid)
		f.Close() // releases the flock
	}
	return nil
}

// quarantinedUIDs lists the uids withdrawn from use and why.
func (p *uidPool) quarantinedUIDs() map[uint32]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[uint32]error, len(p.quarantined))
	for k, v := range p.quarantined {
		m[k] = v
	}
	return m
}
