package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/rs/zerolog"

	"github.com/warrenhq/warren/sandbox"
)

// RecycleCause is why a pool killed a REPL process; the slot starts a
// fresh one (header imported again) in the background before it serves
// again (giveBack).
type RecycleCause string

// Recycle causes.
const (
	RecycleRequests RecycleCause = "requests" // it served Pool.MaxRequests proofs
	RecycleMemory   RecycleCause = "memory"   // its memory grew past Pool.MaxMemoryBytes
	RecycleTimeout  RecycleCause = "timeout"  // a request (or the process's lifetime) passed its limit
	RecycleCrash    RecycleCause = "crash"    // it died, broke the protocol or answered out of step
	RecycleHeader   RecycleCause = "header"   // the next proof needs another header
	RecycleCancel   RecycleCause = "cancel"   // the caller gave up mid-request: the stream is out of step
)

// ReplStats counts a pool's processes.
type ReplStats struct {
	// Started is how many processes started with their header imported.
	Started int64
	// Recycled counts the processes killed, by cause (Close not included).
	Recycled map[RecycleCause]int64
}

// Stats returns the pool's counters so far.
func (pl *ReplPool) Stats() ReplStats {
	pl.statsMu.Lock()
	defer pl.statsMu.Unlock()
	return ReplStats{Started: pl.started, Recycled: maps.Clone(pl.recycled)}
}

func (pl *ReplPool) noteStarted() {
	pl.statsMu.Lock()
	pl.started++
	pl.statsMu.Unlock()
}

// recycle kills the slot's process, counts and logs why. The slot starts
// a fresh process when it is given back (or, if that failed, on its next
// proof).
func (pl *ReplPool) recycle(s *replSlot, cause RecycleCause, why string) {
	rp := s.proc
	s.proc = nil
	rp.kill()
	pl.statsMu.Lock()
	pl.recycled[cause]++
	pl.statsMu.Unlock()
	lvl := zerolog.InfoLevel // routine: the pool's own policy
	if cause == RecycleTimeout || cause == RecycleCrash {
		lvl = zerolog.WarnLevel
	}
	pl.log.WithLevel(lvl).Str("cause", string(cause)).Int("uses", rp.uses).Str("why", why).Msg("REPL process recycled")
}

// recycleIfGrown recycles the slot's process when its sandbox's memory
// (sandbox.Handle.Memory: anonymous, shmem and swap; not the shared page
// cache of mmapped .olean files) is above Pool.MaxMemoryBytes. A reading
// that fails keeps the process: the sandbox's hard memory limit still
// bounds it.
func (pl *ReplPool) recycleIfGrown(s *replSlot) {
	n, err := s.proc.memory()
	switch {
	case errors.Is(err, errNoHandle):
		pl.noHandle.Do(func() {
			pl.log.Warn().Msg("the sandbox gives no handle on REPL processes (isolation none?): recycling on max_requests only, not on memory")
		})
	case errors.Is(err, sandbox.ErrRunEnded):
		// It died after answering: its next proof respawns it as a crash.
	case err != nil:
		pl.log.Warn().Err(err).Msg("reading a REPL process's memory failed; not recycled on memory this time")
	case n > pl.p.Pool.MaxMemoryBytes:
		pl.recycle(s, RecycleMemory, fmt.Sprintf("memory %d bytes > max_memory_bytes %d", n, pl.p.Pool.MaxMemoryBytes))
	}
}

// causeOf classifies a failed request.
func causeOf(err error) RecycleCause {
	switch {
	case errors.Is(err, errReplTimeout):
		return RecycleTimeout
	case errors.Is(err, errReplDead):
		return RecycleCrash
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return RecycleCancel
	}
	return RecycleCrash
}
