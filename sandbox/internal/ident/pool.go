package ident

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrPoolExhausted means every uid of the pool's range is in use or
// quarantined; the command was not run. Package sandbox exports it as
// ErrUIDPoolExhausted.
var ErrPoolExhausted = errors.New("sandbox: no free sandbox uid (range exhausted or quarantined)")

// Pool hands out dedicated host uids (used as uid and gid) to runs of a
// root worker. A uid returns to the pool only after its teardown was
// verified; a uid whose teardown failed is quarantined for the life of the
// process, since something of that run may still be alive or on disk.
//
// With a lock directory (every production pool: LockDir) a uid is also
// leased host-wide: an flock on <dir>/<uid>, held while the uid is in use
// (and kept on a quarantined uid), released by the kernel if the worker
// dies. Two workers on one host with the same range then never run
// sandboxes as the same uid.
type Pool struct {
	mu          sync.Mutex
	base, count uint32
	next        uint32
	inUse       map[uint32]bool
	quarantined map[uint32]error
	lockDir     string              // "" leases nothing host-wide (tests)
	lockDirMade bool                // lockDir exists: made once, not per acquire
	leases      map[uint32]*os.File // held flocks, by uid
}

// LockDir holds the host-wide uid leases of every worker on the host.
const LockDir = "/run/warren/uids"

var (
	poolsMu sync.Mutex
	pools   = map[[2]uint32]*Pool{}
)

// SharedPool returns the process-wide pool for a range, leased host-wide
// in LockDir, so that several Runners of one worker never hand out the
// same uid twice.
func SharedPool(base, count uint32) *Pool {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	k := [2]uint32{base, count}
	if p, ok := pools[k]; ok {
		return p
	}
	p := NewPool(base, count, LockDir)
	pools[k] = p
	return p
}

// NewPool returns a pool of its own for uids [base, base+count), leased
// host-wide in lockDir; "" leases nothing host-wide (tests that want two
// pools to collide). Production code uses SharedPool.
func NewPool(base, count uint32, lockDir string) *Pool {
	return &Pool{base: base, count: count, inUse: map[uint32]bool{}, quarantined: map[uint32]error{}, lockDir: lockDir, leases: map[uint32]*os.File{}}
}

// Acquire returns a free uid: not in use, not quarantined and (with a lock
// directory) not leased by another worker on the host; ErrPoolExhausted
// when there is none.
func (p *Pool) Acquire() (uint32, error) {
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
	return 0, ErrPoolExhausted
}

// lease takes uid's host-wide lease; false when another process holds it.
func (p *Pool) lease(uid uint32) (bool, error) {
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

// Release returns uid once verify (the teardown check) passed; otherwise the
// uid is quarantined and the verification error returned, wrapped.
func (p *Pool) Release(uid uint32, verify func(uid uint32) error) error {
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

// InUse reports whether uid is handed out and not released yet.
func (p *Pool) InUse(uid uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse[uid]
}

// Quarantined lists the uids withdrawn from use and why.
func (p *Pool) Quarantined() map[uint32]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[uint32]error, len(p.quarantined))
	for k, v := range p.quarantined {
		m[k] = v
	}
	return m
}
