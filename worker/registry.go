package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/warrenhq/warren/messages"
)

// registryLoop keeps this host's entry in the registry bucket fresh; the
// bucket's TTL drops it if the worker dies.
// The first entry is written by Start, before it returns.
func (w *Worker) registryLoop(started time.Time) {
	t := time.NewTicker(w.cfg.RegistryInterval)
	defer t.Stop()
	for {
		select {
		case <-w.pullCtx.Done():
			return
		case <-t.C:
			w.register(started)
		}
	}
}

func (w *Worker) register(started time.Time) {
	info := messages.HostInfo{
		ID: w.cfg.HostID, Pool: w.cfg.Pool, Capacity: w.cfg.Capacity,
		Free:      w.cfg.Capacity - int(w.running.Load()),
		Isolation: w.cfg.Isolation, Profiles: w.cfg.profiles(), Version: w.cfg.Version,
		StartedAt: started, UpdatedAt: time.Now().UTC(),
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
		_, err = kv.Put(ctx, hostKey(w.cfg.HostID), data)
	}
	if err != nil {
		w.log.Warn().Err(err).Msg("host registry refresh failed")
	}
}

func (w *Worker) deregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if kv, err := w.js.KeyValue(ctx, messages.BucketHosts); err == nil {
		_ = kv.Delete(ctx, hostKey(w.cfg.HostID))
	}
}

// hostKey makes a host id a valid KV key.
func hostKey(id string) string {
	b := []byte(id)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}
