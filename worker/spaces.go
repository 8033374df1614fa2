package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// space is what the worker holds of one namespace (messages.Namespace:
// the fleet's, or one tenant's streams and buckets): its results stream,
// its outputs store, its quota, how many of its tasks run here, and its
// pull loops, one set per profile (as many loops as its weight). The
// pull loops of every space compete for the host's slots, and a freed
// slot goes to the loop that has waited longest (the slot channel serves
// waiting receivers in order), so tenants with queued tasks take turns:
// one holding thousands of tasks delays another's by one turn per slot.
type space struct {
	ns      messages.Namespace
	results jetstream.Stream
	outputs jetstream.ObjectStore
	quota   atomic.Pointer[messages.TenantQuota] // nil for the fleet's
	running atomic.Int64                         // its tasks running here
	// freed is signalled when one of its tasks ends, for a loop held back
	// by the quota's Running cap.
	freed chan struct{}
	// stop ends its pull loops (a tenant removed); loops counts them.
	stop  context.CancelFunc
	loops sync.WaitGroup
}

// spaces are the namespaces a worker serves, by tenant ("" the fleet's).
type spaces struct {
	mu sync.Mutex
	m  map[string]*space
	// pulls counts the pull loops of every space: more than one means
	// they contest the slots (pullLoop).
	pulls atomic.Int64
}

// spaceOf is the space holding batch; nil for a tenant this worker does
// not serve (not registered, or removed).
func (w *Worker) spaceOf(batch string) *space {
	w.spaces.mu.Lock()
	defer w.spaces.mu.Unlock()
	return w.spaces.m[messages.BatchTenant(batch)]
}

// openSpace opens ns and starts its pull loops (prepareSpace, then
// runSpace). A tenant's namespace that the admin has not set up yet is an
// error (its streams are missing); the tenant watch tries again when its
// registry entry changes.
func (w *Worker) openSpace(ctx context.Context, ns messages.Namespace, quota *messages.TenantQuota) error {
	s, consumers, err := w.prepareSpace(ctx, ns, quota)
	if err != nil {
		return err
	}
	w.runSpace(s, consumers)
	return nil
}

// prepareSpace opens ns's streams and stores, its cancels, its
// max-deliveries advisories and a consumer per profile.
func (w *Worker) prepareSpace(ctx context.Context, ns messages.Namespace, quota *messages.TenantQuota) (*space, []jetstream.Consumer, error) {
	s := &space{ns: ns, freed: make(chan struct{}, 1)}
	if quota != nil {
		q := quota.WithDefaults()
		s.quota.Store(&q)
	}
	var err error
	if s.results, err = w.js.Stream(ctx, ns.Results()); err != nil {
		return nil, nil, fmt.Errorf("worker: open results stream %s: %w", ns.Results(), err)
	}
	if s.outputs, err = w.js.ObjectStore(ctx, ns.Outputs()); err != nil {
		return nil, nil, fmt.Errorf("worker: open outputs object store %s: %w", ns.Outputs(), err)
	}
	var consumers []jetstream.Consumer
	for _, p := range w.cfg.profiles() {
		c, err := broker.EnsureTaskConsumer(ctx, w.js, ns, w.cfg.Pool, p, w.cfg.Consumer)
		if err != nil {
			return nil, nil, err
		}
		consumers = append(consumers, c)
	}
	if err := w.watchCancels(ctx, w.cancels, ns); err != nil {
		return nil, nil, err
	}
	if err := w.watchMaxDeliveries(ns); err != nil {
		return nil, nil, err
	}
	return s, consumers, nil
}

// runSpace registers s and starts its pull loops: as many per profile as
// its weight (at most the host's capacity).
func (w *Worker) runSpace(s *space, consumers []jetstream.Consumer) {
	w.spaces.mu.Lock()
	if w.spaces.m[s.ns.Tenant] != nil {
		w.spaces.mu.Unlock()
		return // opened meanwhile
	}
	w.spaces.m[s.ns.Tenant] = s
	w.spaces.mu.Unlock()
	var loopCtx context.Context
	loopCtx, s.stop = context.WithCancel(w.pullCtx)
	weight := 1
	if q := s.quota.Load(); q != nil {
		weight = min(max(q.Weight, 1), w.cfg.Capacity)
	}
	for i, c := range consumers {
		for range weight {
			w.spaces.pulls.Add(1)
			w.pullers.Add(1)
			s.loops.Add(1)
			go func() {
				defer w.pullers.Done()
				defer s.loops.Done()
				defer w.spaces.pulls.Add(-1)
				w.pullLoop(loopCtx, s, c, w.cfg.profiles()[i])
			}()
		}
	}
}

// closeSpace stops a removed tenant's pull loops; its running tasks end
// as they would, and its data stays on the broker.
func (w *Worker) closeSpace(tenant string) {
	w.spaces.mu.Lock()
	s := w.spaces.m[tenant]
	delete(w.spaces.m, tenant)
	w.spaces.mu.Unlock()
	if s != nil && s.stop != nil {
		s.stop()
	}
}

// taskStarted and taskEnded count a space's tasks running here.
func (s *space) taskStarted() { s.running.Add(1) }

func (s *space) taskEnded() {
	s.running.Add(-1)
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// atCap reports whether the space's quota holds its next task back on
// this host (Running reached).
func (s *space) atCap() bool {
	q := s.quota.Load()
	return q != nil && q.Running > 0 && s.running.Load() >= int64(q.Running)
}

// watchTenants opens every registered tenant's namespace, then follows
// the tenant registry: a new tenant's namespace is opened (its tasks run
// from then on), a changed quota applies to what comes next, a removed
// tenant's pull loops stop. It returns once the tenants registered at
// start are open (those whose streams are missing are logged and retried
// when their entry changes).
func (w *Worker) watchTenants(ctx context.Context) error {
	kv, err := w.js.KeyValue(ctx, messages.BucketTenants)
	if err != nil {
		return fmt.Errorf("worker: open %s: %w", messages.BucketTenants, err)
	}
	return w.watchKV(ctx, kv, w.pullCtx, w.tenantChanged)
}

// tenantChanged applies one tenant registry entry.
func (w *Worker) tenantChanged(e jetstream.KeyValueEntry) {
	tenant := e.Key()
	if e.Operation() != jetstream.KeyValuePut {
		w.closeSpace(tenant)
		return
	}
	q, err := broker.DecodeQuota(e.Value())
	if err != nil || !messages.ValidID(tenant) {
		w.log.Error().Err(err).Str("tenant", tenant).Msg("tenant registry entry unreadable; its tasks are not served")
		return
	}
	w.spaces.mu.Lock()
	s := w.spaces.m[tenant]
	w.spaces.mu.Unlock()
	if s != nil {
		s.quota.Store(&q)
		return
	}
	ctx, cancel := context.WithTimeout(w.pullCtx, spaceOpenTimeout)
	defer cancel()
	if err := w.openSpace(ctx, messages.Namespace{Tenant: tenant}, &q); err != nil {
		if !errors.Is(err, context.Canceled) {
			w.log.Error().Err(err).Str("tenant", tenant).Msg("tenant's namespace not opened; its tasks are not served until the admin sets it up (`warren setup --auth-dir`)")
		}
		return
	}
	w.log.Info().Str("tenant", tenant).Str("quota", q.String()).Msg("serving a tenant")
}

// spaceOpenTimeout bounds opening one namespace.
const spaceOpenTimeout = 30 * 1e9
