package worker

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// cancelSet mirrors the cancel bucket and knows which tasks run here, so a
// cancel kills a running sandbox at once and skips a queued task when it is
// pulled.
type cancelSet struct {
	mu        sync.Mutex
	keys      map[string]bool
	running   map[string]map[*context.CancelCauseFunc]string // batch -> cancel -> task id
	watcher   jetstream.KeyWatcher
	initDone  chan struct{}
	closeOnce sync.Once
}

// watchCancels starts mirroring the cancel bucket and returns once the
// existing keys are loaded, so no task starts before earlier cancels are
// known.
func (w *Worker) watchCancels(ctx context.Context) (*cancelSet, error) {
	kv, err := w.js.KeyValue(ctx, messages.BucketCancel)
	if err != nil {
		return nil, fmt.Errorf("worker: open cancel bucket: %w", err)
	}
	kw, err := kv.WatchAll(w.pullCtx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("worker: watch cancel bucket: %w", err)
	}
	cs := &cancelSet{keys: map[string]bool{}, running: map[string]map[*context.CancelCauseFunc]string{}, watcher: kw, initDone: make(chan struct{})}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		for e := range kw.Updates() {
			if e == nil {
				cs.closeOnce.Do(func() { close(cs.initDone) })
				continue
			}
			cs.add(e.Key())
		}
	}()
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		<-w.workCtx.Done()
		_ = kw.Stop()
	}()
	select {
	case <-cs.initDone:
		return cs, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("worker: load cancel bucket: %w", ctx.Err())
	}
}

func (cs *cancelSet) add(key string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.keys[key] = true
	batch, id := splitCancelKey(key)
	for cancel, tid := range cs.running[batch] {
		if id == "" || id == tid {
			(*cancel)(errUserCancel)
		}
	}
}

func (cs *cancelSet) cancelled(batch, id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.keys[messages.CancelKey(batch, "")] || cs.keys[messages.CancelKey(batch, id)]
}

// track registers a running task; the returned func unregisters it.
func (cs *cancelSet) track(batch, id string, cancel context.CancelCauseFunc) func() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.running[batch] == nil {
		cs.running[batch] = map[*context.CancelCauseFunc]string{}
	}
	p := &cancel
	cs.running[batch][p] = id
	// A cancel that landed between the check and now.
	if cs.keys[messages.CancelKey(batch, "")] || cs.keys[messages.CancelKey(batch, id)] {
		cancel(errUserCancel)
	}
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		delete(cs.running[batch], p)
		if len(cs.running[batch]) == 0 {
			delete(cs.running, batch)
		}
	}
}

func splitCancelKey(key string) (batch, id string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '.' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
}
