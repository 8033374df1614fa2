package sandbox

import (
	"errors"
	"fmt"
	"sync"
)

// ErrUIDPoolExhausted means every uid of the configured range is in use or
// quarantined; the command was not run.
var ErrUIDPoolExhausted = errors.New("sandbox: no free sandbox uid (range exhausted or quarantined)")

// uidPool hands out dedicated host uids (used as uid and gid) to runs of a
// root worker. A uid returns to the pool only after its teardown was
// verified; a uid whose teardown failed is quarantined for the life of the
// process, since something of that run may still be alive or on disk.
type uidPool struct {
	mu          sync.Mutex
	base, count uint32
	next        uint32
	inUse       map[uint32]bool
	quarantined map[uint32]error
}

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
	pools[k] = p
	return p
}

func newUIDPool(base, count uint32) *uidPool {
	return &uidPool{base: base, count: count, inUse: map[uint32]bool{}, quarantined: map[uint32]error{}}
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
		p.inUse[uid] = true
		return uid, nil
	}
	return 0, ErrUIDPoolExhausted
}

// release returns uid once verify (the teardown check) passed; otherwise the
// uid is quarantined and the verification error returned.
func (p *uidPool) release(uid uint32, verify func(uid uint32) error) error {
	err := verify(uid)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inUse, uid)
	if err != nil {
		p.quarantined[uid] = err
		return fmt.Errorf("sandbox uid %d quarantined: %w", uid, err)
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
