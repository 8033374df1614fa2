package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/warrenhq/warren/messages"
)

// registryLoop keeps this host's entry in the registry bucket fresh; the
// bucket's TTL drops it if the worker dies. It refreshes every
// RegistryInterval, and soon after a slot is taken or freed (bursts
// coalesced to one write per registryMinGap), so free slots are never more
// than about registryMinGap stale. The first entry is written by Start,
// before it returns.
func (w *Worker) registryLoop() {
	t := time.NewTicker(w.cfg.RegistryInterval)
	defer t.Stop()
	for {
		select {
		case <-w.pullCtx.Done():
			return
		case <-t.C:
		case <-w.nudge:
			if !sleepCtx(w.pullCtx, registryMinGap) {
				return
			}
			select {
			case <-w.nudge:
			default:
			}
		}
		w.register()
	}
}

// registryMinGap bounds registry writes caused by slot changes.
const registryMinGap = 250 * time.Millisecond

// nudgeRegistry asks for a registry refresh soon; it never blocks.
func (w *Worker) nudgeRegistry() {
	select {
	case w.nudge <- struct{}{}:
	default:
	}
}

func (w *Worker) register() {
	info := messages.HostInfo{
		ID: w.cfg.HostID, Pool: w.cfg.Pool, Capacity: w.cfg.Capacity,
		Free:      w.cfg.Capacity - int(w.running.Load()) - int(w.sessions.Load()),
		Isolation: w.cfg.Isolation, Profiles: w.cfg.profiles(), Version: w.cfg.Version,
		Draining: w.draining.Load(), Ceilings: w.cfg.Ceilings,
		StartedAt: w.startedAt, UpdatedAt: time.Now().UTC(),
	}
	if w.cfg.SealKey != nil {
		info.SealKey, _ = w.cfg.SealKey.PublicKey()
	}
	data, err := json.Marshal(info)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := w.js.KeyValue(ctx, messages.BucketHosts)
	if err == nil {
		_, err = kv.Put(ctx, hostKey(w.cfg.Pool, w.cfg.HostID), data)
	}
	if err != nil {
		w.log.Warn().Err(err).Msg("host registry refresh failed")
	}
}

func (w *Worker) deregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if kv, err := w.js.KeyValue(ctx, messages.BucketHosts); err == nil {
		_ = kv.Delete(ctx, hostKey(w.cfg.Pool, w.cfg.HostID))
	}
}

// hostKey is the registry key of a host: "<pool>.<host id>", the host id
// made a valid key token. The pool comes first so that the broker can
// confine a pool's workers to its own entries ($KV.warren_hosts.<pool>.>).
func hostKey(pool, id string) string {
	return pool + "." + hostToken(id)
}

func hostToken(id string) string { return messages.HostToken(id) }
