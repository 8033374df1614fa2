package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// cancelSet mirrors the cancel bucket and knows which tasks run here, so a
// cancel kills a running sandbox at once and skips a queued task when it is
// pulled. Keys are messages.CancelKey(batch, attempt, id).
type cancelSet struct {
	mu       sync.Mutex
	keys     map[string]bool
	running  map[string]map[*context.CancelCauseFunc]string // "batch.attempt" -> cancel -> task id
	initDone chan struct{}
	once     sync.Once
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
	cs := &cancelSet{keys: map[string]bool{}, running: map[string]map[*context.CancelCauseFunc]string{}, initDone: make(chan struct{})}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		for e := range kw.Updates() {
			if e == nil {
				cs.once.Do(func() { close(cs.initDone) })
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
	// key is "<batch>.<attempt>" or "<batch>.<attempt>.<id>", and a batch
	// may hold a dot ("<tenant>.<name>"): match it against the scopes of
	// running tasks rather than parse it.
	for scope, tasks := range cs.running {
		rest, ok := strings.CutPrefix(key, scope)
		if !ok || (rest != "" && rest[0] != '.') {
			continue
		}
		for cancel, tid := range tasks {
			if rest == "" || rest[1:] == tid {
				(*cancel)(errUserCancel)
			}
		}
	}
}

func (cs *cancelSet) cancelledLocked(batch string, attempt int, id string) bool {
	return cs.keys[messages.CancelKey(batch, attempt, "")] || cs.keys[messages.CancelKey(batch, attempt, id)]
}

func (cs *cancelSet) cancelled(batch string, attempt int, id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.cancelledLocked(batch, attempt, id)
}

// track registers a running task; the returned func unregisters it.
func (cs *cancelSet) track(batch string, attempt int, id string, cancel context.CancelCauseFunc) func() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	scope := messages.CancelKey(batch, attempt, "")
	if cs.running[scope] == nil {
		cs.running[scope] = map[*context.CancelCauseFunc]string{}
	}
	p := &cancel
	cs.running[scope][p] = id
	// A cancel that landed between the check and now.
	if cs.cancelledLocked(batch, attempt, id) {
		cancel(errUserCancel)
	}
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		delete(cs.running[scope], p)
		if len(cs.running[scope]) == 0 {
			delete(cs.running, scope)
		}
	}
}
