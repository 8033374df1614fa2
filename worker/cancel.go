package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// cancelSet mirrors the cancel buckets (the fleet's and each tenant's) and
// knows which tasks run here, so a cancel kills a running sandbox at once
// and skips a queued task when it is pulled. Keys are
// messages.CancelKey(batch, attempt, id), kept per namespace: a key cancels
// only tasks of the namespace whose bucket holds it, so a tenant who
// writes another tenant's batch into his own bucket cancels nothing.
type cancelSet struct {
	mu      sync.Mutex
	keys    map[messages.Namespace]map[string]bool
	running map[string]*running // by "batch.attempt"
}

// running are the tasks of one batch attempt that run here.
type running struct {
	ns    messages.Namespace
	tasks map[*context.CancelCauseFunc]string // cancel -> task id
}

func newCancelSet() *cancelSet {
	return &cancelSet{keys: map[messages.Namespace]map[string]bool{}, running: map[string]*running{}}
}

// watchCancels starts mirroring namespace ns's cancel bucket into cs and
// returns once its existing keys are loaded, so no task of the namespace
// starts before earlier cancels are known. The watch ends with the
// worker's work.
func (w *Worker) watchCancels(ctx context.Context, cs *cancelSet, ns messages.Namespace) error {
	kv, err := w.js.KeyValue(ctx, ns.Cancel())
	if err != nil {
		return fmt.Errorf("worker: open cancel bucket %s: %w", ns.Cancel(), err)
	}
	return w.watchKV(ctx, kv, w.workCtx, func(e jetstream.KeyValueEntry) { cs.add(ns, e.Key()) }, jetstream.IgnoreDeletes())
}

// watchKV follows every entry of kv with apply (on one goroutine, in
// order) until until ends, and returns once the entries there at the
// start were applied (or ctx ends first).
func (w *Worker) watchKV(ctx context.Context, kv jetstream.KeyValue, until context.Context, apply func(jetstream.KeyValueEntry), opts ...jetstream.WatchOpt) error {
	kw, err := kv.WatchAll(w.pullCtx, opts...)
	if err != nil {
		return fmt.Errorf("worker: watch %s: %w", kv.Bucket(), err)
	}
	loaded := make(chan struct{})
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		var once sync.Once
		for e := range kw.Updates() {
			if e == nil {
				once.Do(func() { close(loaded) })
				continue
			}
			apply(e)
		}
	}()
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		<-until.Done()
		_ = kw.Stop()
	}()
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("worker: load %s: %w", kv.Bucket(), ctx.Err())
	}
}

// add records key of namespace ns's bucket and cancels the running tasks
// of ns it names.
func (cs *cancelSet) add(ns messages.Namespace, key string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.keys[ns] == nil {
		cs.keys[ns] = map[string]bool{}
	}
	cs.keys[ns][key] = true
	// key is "<batch>.<attempt>" or "<batch>.<attempt>.<id>", and a batch
	// may hold a dot ("<tenant>.<name>"): match it against the scopes of
	// running tasks rather than parse it.
	for scope, r := range cs.running {
		rest, ok := strings.CutPrefix(key, scope)
		if !ok || (rest != "" && rest[0] != '.') || r.ns != ns {
			continue
		}
		for cancel, tid := range r.tasks {
			if rest == "" || rest[1:] == tid {
				(*cancel)(errUserCancel)
			}
		}
	}
}

func (cs *cancelSet) cancelledLocked(batch string, attempt int, id string) bool {
	keys := cs.keys[messages.NamespaceOf(batch)]
	return keys[messages.CancelKey(batch, attempt, "")] || keys[messages.CancelKey(batch, attempt, id)]
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
		cs.running[scope] = &running{ns: messages.NamespaceOf(batch), tasks: map[*context.CancelCauseFunc]string{}}
	}
	p := &cancel
	cs.running[scope].tasks[p] = id
	// A cancel that landed between the check and now.
	if cs.cancelledLocked(batch, attempt, id) {
		cancel(errUserCancel)
	}
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		delete(cs.running[scope].tasks, p)
		if len(cs.running[scope].tasks) == 0 {
			delete(cs.running, scope)
		}
	}
}
