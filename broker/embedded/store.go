package embedded

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/sys/unix"
)

// DiskStatus is the data dir's filesystem and JetStream's store as the
// store guard last saw them (see "Disk full" in the package doc).
type DiskStatus struct {
	// Free is what the broker may still write there (statfs's available
	// blocks); Size the filesystem's size. Both 0 before the first check.
	Free, Size int64
	// LowBelow is the warning level: Low is Free < LowBelow.
	LowBelow int64
	Low      bool
	// StoreFailed: JetStream failed a write to its store (the disk
	// filled) and refuses writes until it restarts, which it does once
	// the disk is no longer Low.
	StoreFailed bool
	// Restarts counts restarts after a store failure since Start.
	Restarts int
}

// diskState is the guard's last DiskStatus, read by Disk.
type diskState struct {
	mu sync.Mutex
	st DiskStatus
}

func (d *diskState) set(st DiskStatus) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st.Restarts = d.st.Restarts
	d.st = st
}

func (d *diskState) restarted() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.Restarts++
	d.st.StoreFailed = false
}

func (d *diskState) get() DiskStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

// Disk is the data dir's free space and the store's state at the last
// check (every Config.DiskCheckInterval), for metrics.
func (s *Server) Disk() DiskStatus { return s.disk.get() }

// statDisk reads dir's filesystem; low is the warning level (cfgLow when
// set, else a tenth of the size, at most 1 GiB).
func statDisk(dir string, cfgLow int64) (DiskStatus, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return DiskStatus{}, fmt.Errorf("broker: statfs %s: %w", dir, err)
	}
	st := DiskStatus{Free: int64(fs.Bavail) * fs.Bsize, Size: int64(fs.Blocks) * fs.Bsize}
	st.LowBelow = cfgLow
	if st.LowBelow <= 0 {
		st.LowBelow = min(st.Size/10, 1<<30)
	}
	st.Low = st.Free < st.LowBelow
	return st, nil
}

// storeFault says why JetStream cannot store, nil when it can. nats-server
// keeps a stream's first write error (no space left on device) and
// refuses every later write to it, and disables JetStream on a write
// error it cannot go on from (its Raft log, a replicated stream), until
// it restarts: freeing space alone does not bring it back.
func storeFault(ns *server.Server) error {
	if !ns.JetStreamEnabled() {
		return errors.New("JetStream is disabled")
	}
	h := ns.Healthz(&server.HealthzOptions{Details: true})
	for _, e := range h.Errors {
		if e.Type == server.HealthzErrorStream && strings.Contains(e.Error, "write error") {
			return errors.New(e.Error)
		}
	}
	return nil
}

// guardStore checks the data dir's free space and JetStream's store every
// DiskCheckInterval until Stop: it warns while free space is low (again
// every LowDiskWarnEvery), and restarts the server when its store failed
// and space is back.
func (s *Server) guardStore() {
	t := time.NewTicker(s.cfg.DiskCheckInterval)
	defer t.Stop()
	var w warner
	for {
		s.checkStore(&w)
		select {
		case <-s.stopWatch:
			return
		case <-t.C:
		}
	}
}

// warner repeats a warning at most every LowDiskWarnEvery while its
// condition holds.
type warner struct {
	low, failed time.Time // when each was last logged; zero: not now
}

// due reports whether a warning of a condition last logged at *at is due
// now, and records it.
func (w *warner) due(at *time.Time, every time.Duration) bool {
	now := time.Now()
	if !at.IsZero() && now.Sub(*at) < every {
		return false
	}
	*at = now
	return true
}

// checkStore is one look of guardStore.
func (s *Server) checkStore(w *warner) {
	st, err := statDisk(s.cfg.DataDir, s.cfg.LowDiskFree)
	if err != nil {
		if w.due(&w.low, s.cfg.LowDiskWarnEvery) {
			s.log.Warn().Err(err).Msg("cannot read the data dir's free space")
		}
		return
	}
	s.warnLow(w, st)
	ns := s.current()
	fault := storeFault(ns)
	st.StoreFailed = fault != nil
	s.disk.set(st)
	switch {
	case fault == nil:
		if !w.failed.IsZero() {
			s.log.Info().Msg("JetStream stores again")
		}
		w.failed = time.Time{}
	case st.Low:
		if w.due(&w.failed, s.cfg.LowDiskWarnEvery) {
			s.log.Error().Err(fault).Str("data_dir", s.cfg.DataDir).Str("free", size(st.Free)).Str("resume_at", size(st.LowBelow)).
				Msg("JetStream cannot write its store (disk full): it refuses every write, and restarts once the free space is back above the warning level; clients retry meanwhile (up to --retry-for), workers hold their results")
		}
	default:
		s.log.Warn().Err(fault).Str("free", size(st.Free)).Msg("JetStream's store failed a write and space is back: restarting the broker (clients reconnect)")
		if err := s.restart(); err != nil {
			s.log.Error().Err(err).Msg("broker restart failed; trying again")
			return
		}
		w.failed = time.Time{}
	}
}

// warnLow logs while the data dir's free space is below the warning
// level, and once when it is back above it.
func (s *Server) warnLow(w *warner, st DiskStatus) {
	if !st.Low {
		if !w.low.IsZero() {
			s.log.Info().Str("data_dir", s.cfg.DataDir).Str("free", size(st.Free)).Msg("data dir has free space again")
		}
		w.low = time.Time{}
		return
	}
	if w.due(&w.low, s.cfg.LowDiskWarnEvery) {
		s.log.Warn().Str("data_dir", s.cfg.DataDir).Str("free", size(st.Free)).Str("size", size(st.Size)).Str("warn_below", size(st.LowBelow)).
			Msg("the broker's data dir is almost full: once it is full JetStream stores nothing more (submits wait, results are held) until space is freed; free space there, or move --data-dir")
	}
}

// restart replaces the running nats-server with a new one on the same
// port and store: the new one recovers the store from disk, writes
// again, and clients (TCP and Connect's) reconnect to it. The data dir
// stays locked throughout.
func (s *Server) restart() error {
	opts, err := s.options()
	if err != nil {
		return err
	}
	if s.port != 0 {
		opts.Port = s.port
	}
	old := s.current()
	old.Shutdown()
	old.WaitForShutdown()
	ns, err := s.launch(opts, s.cfg.ReadyTimeout)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ns = ns
	s.mu.Unlock()
	s.disk.restarted()
	s.log.Info().Str("url", s.clientURL(ns)).Str("server_id", ns.ID()).Msg("broker restarted; JetStream stores again")
	if s.cfg.AfterRestart != nil {
		s.cfg.AfterRestart()
	}
	return nil
}

// size renders n bytes for a log line.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
