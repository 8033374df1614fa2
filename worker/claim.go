package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// claims makes a task attempt run at most once at a time across the fleet,
// whatever Nats-Msg-Id its publishers used: before running, a worker
// creates the attempt's key in the claims bucket (create-only), refreshes
// it with the task's heartbeat, and when done either releases it (the
// attempt has no result: another run may take it at once) or, once the
// attempt's result is stored, leaves it to its TTL (settle): a later
// delivery of the attempt finds the claim or the result, and either way
// acks without running, so a purge would be one more replicated write on
// every task's path for nothing. The key has a TTL (the consumer's
// AckWait), so the claim of a worker that died expires and another
// delivery takes the attempt over.
type claims struct {
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	host string
	ttl  time.Duration

	mu    sync.Mutex
	local map[string]bool // keys claimed or being claimed by this worker
}

// heldClaim is a claim this worker holds.
type heldClaim struct {
	key string
	val []byte

	mu      sync.Mutex
	rev     uint64
	settled bool // the attempt's result is stored: release leaves the key to its TTL
}

// settle records that the attempt's result is stored; nil is a no-op.
func (h *heldClaim) settle() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.settled = true
	h.mu.Unlock()
}

// errClaimHeld means another run of the attempt holds its claim.
var errClaimHeld = errors.New("the task attempt is claimed by another run")

func (w *Worker) openClaims(ctx context.Context) (*claims, error) {
	kv, err := w.js.KeyValue(ctx, messages.BucketClaims)
	if err != nil {
		return nil, fmt.Errorf("worker: open claims bucket: %w", err)
	}
	// Nats-TTL has a resolution of a second: round up, so the claim never
	// lives shorter than the delivery (and outlives every heartbeat gap).
	ttl := max((w.cfg.Consumer.AckWait + time.Second - 1).Truncate(time.Second), time.Second)
	return &claims{kv: kv, js: w.js, host: w.cfg.HostID, ttl: ttl, local: map[string]bool{}}, nil
}

// tryAcquire claims key for this worker. It returns errClaimHeld when
// another run holds it: another worker's live claim, or a run of the same
// attempt on this worker. A claim naming this host that no run here holds
// is left over from an earlier life of the worker and is taken over.
func (c *claims) tryAcquire(ctx context.Context, key string, cl messages.Claim) (*heldClaim, error) {
	c.mu.Lock()
	if c.local[key] {
		c.mu.Unlock()
		return nil, errClaimHeld
	}
	c.local[key] = true
	c.mu.Unlock()
	h, err := c.create(ctx, key, cl)
	if err != nil {
		c.forget(key)
		return nil, err
	}
	return h, nil
}

func (c *claims) create(ctx context.Context, key string, cl messages.Claim) (*heldClaim, error) {
	cl.Host, cl.Time = c.host, time.Now().UTC()
	val, err := json.Marshal(cl)
	if err != nil {
		return nil, err
	}
	rev, err := c.kv.Create(ctx, key, val, jetstream.KeyTTL(c.ttl))
	if err == nil {
		return &heldClaim{key: key, val: val, rev: rev}, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("claim %s: %w", key, err)
	}
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, errClaimHeld // gone meanwhile: the next poll creates it
	}
	if err != nil {
		return nil, fmt.Errorf("read claim %s: %w", key, err)
	}
	var holder messages.Claim
	if json.Unmarshal(e.Value(), &holder) == nil && holder.Host != c.host {
		return nil, errClaimHeld
	}
	// Ours, and no run here holds it (tryAcquire checked): take it over.
	rev, err = c.put(ctx, key, val, e.Revision())
	if err != nil {
		return nil, errClaimHeld // someone else won the race
	}
	return &heldClaim{key: key, val: val, rev: rev}, nil
}

// put writes a claim over revision rev with a fresh TTL. KeyValue.Update
// cannot set a TTL, so this is the same publish with Nats-TTL added.
func (c *claims) put(ctx context.Context, key string, val []byte, rev uint64) (uint64, error) {
	msg := &nats.Msg{Subject: "$KV." + messages.BucketClaims + "." + key, Data: val}
	ack, err := c.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(c.ttl))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// refresh renews a held claim's TTL. An error means the claim is no longer
// ours (it expired, and maybe another run took it) or the broker is away.
func (c *claims) refresh(ctx context.Context, h *heldClaim) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rev, err := c.put(ctx, h.key, h.val, h.rev)
	if err != nil {
		if !isWrongLastSeq(err) {
			return err // the broker is away or busy: try again later
		}
		// It expired (the broker was away longer than the TTL, say): take
		// it back if nobody else did.
		var cerr error
		if rev, cerr = c.kv.Create(ctx, h.key, h.val, jetstream.KeyTTL(c.ttl)); cerr != nil {
			return fmt.Errorf("%w: %w", errClaimLost, cerr)
		}
	}
	h.rev = rev
	return nil
}

// release gives a held claim up; nil is a no-op. A claim whose attempt
// has no result is purged, only if it is still ours, with a marker that
// expires after the TTL; a settled one (result stored) is left to expire.
func (c *claims) release(h *heldClaim) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if !h.settled {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.kv.Purge(ctx, h.key, jetstream.LastRevision(h.rev), jetstream.PurgeTTL(c.ttl))
		cancel()
	}
	h.mu.Unlock()
	c.forget(h.key)
}

func (c *claims) forget(key string) {
	c.mu.Lock()
	delete(c.local, key)
	c.mu.Unlock()
}

// claimPoll is how often a delivery waiting for a claimed attempt looks for
// its result or for the claim to go.
const claimPoll = 200 * time.Millisecond

// awaitClaim claims the attempt of task t for this delivery. While another
// run holds it, the delivery waits, heartbeating its own message (so it is
// neither redelivered nor counted as a new delivery), until the attempt's
// result is stored (stored is true: ack, do not run) or the claim is
// released or expires (it is then taken); while the broker is away too.
// It returns an error when the worker drains or stops, or when the broker
// refuses the claim.
func (w *Worker) awaitClaim(msg jetstream.Msg, meta *jetstream.MsgMetadata, t *messages.Task) (h *heldClaim, stored bool, err error) {
	key := messages.ClaimKey(t.Batch, t.EffectiveAttempt(), t.ID)
	cl := messages.Claim{StreamSeq: meta.Sequence.Stream, Delivery: int(meta.NumDelivered)}
	if msg != nil {
		// On its own clock: a slow look at the broker must not let the
		// delivery's AckWait run out.
		defer every(w.cfg.Heartbeat, func() { _ = msg.InProgress() })()
	}
	failures := 0
	for {
		ctx, cancel := context.WithTimeout(w.workCtx, 5*time.Second)
		h, err = w.claims.tryAcquire(ctx, key, cl)
		cancel()
		switch {
		case err == nil:
			return h, false, nil
		case !errors.Is(err, errClaimHeld) && !broker.Unavailable(err):
			// Refused; a broker that is away (a restart, a full disk) is
			// waited for with the delivery kept alive, as a held claim is.
			if failures++; failures >= 3 {
				return nil, false, err
			}
		}
		if stored, _ := w.resultStored(t); stored {
			return nil, true, nil
		}
		select {
		case <-w.pullCtx.Done():
			return nil, false, errShutdown
		case <-w.workCtx.Done():
			return nil, false, errShutdown
		case <-time.After(claimPoll):
		}
	}
}
