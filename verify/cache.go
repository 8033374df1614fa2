package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/warrenhq/warren/messages"
)

// VerdictCache stores decided verdicts under a content key (CacheKey). It
// must be safe for concurrent use. A cache error never fails a check: the
// proof is checked as if the cache were empty.
type VerdictCache interface {
	// Get returns the stored verdict, or nil and no error when there is none.
	Get(ctx context.Context, key string) (*CachedVerdict, error)
	// Put stores a verdict unless one is stored already (the first decided
	// verdict stays).
	Put(ctx context.Context, key string, v *CachedVerdict) error
}

// CachedVerdict is one cache entry.
type CachedVerdict struct {
	Verdict   *messages.Verdict `json:"verdict"`
	DecidedAt time.Time         `json:"decided_at"`
}

// CacheKey is the hex SHA-256 of everything a verdict depends on: the
// checker version, the toolchain fingerprint (which covers the profile's
// policy, Profile.Fingerprint), and the theorem, statement, header and
// proof; and of its scope: the tenant whose batch asks
// (messages.BatchTenant, "" for the fleet's own batches), so one tenant
// never learns from a cached answer that another checked the same proof.
// Ids, batch names, attempts and NoCache are not part of it.
func CacheKey(fingerprint, scope string, spec *messages.VerifySpec) string {
	b, err := json.Marshal([]string{CheckerVersion, fingerprint, scope, spec.Theorem, spec.Statement, spec.Header, spec.Proof})
	if err != nil {
		panic(err) // strings always encode
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// cacheable reports whether a verdict depends only on the proof and the
// checker: not a timeout, out of memory, crash or sandbox error (the
// host's load, memory or setup may have decided those).
func cacheable(v *messages.Verdict) bool {
	switch v.Reason {
	case messages.ReasonTimeout, messages.ReasonOutOfMemory, messages.ReasonCrash, messages.ReasonSandboxError:
		return false
	}
	return true
}

// KVCache is a VerdictCache in the JetStream key-value bucket
// messages.BucketVerdicts (broker.Setup creates it; its TTL bounds how long
// a verdict is served).
type KVCache struct {
	js jetstream.JetStream

	mu sync.Mutex
	kv jetstream.KeyValue // bound on first use: the bucket may be set up after New
}

// NewKVCache returns a cache in js's verdict bucket.
func NewKVCache(js jetstream.JetStream) *KVCache { return &KVCache{js: js} }

func (c *KVCache) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kv == nil {
		kv, err := c.js.KeyValue(ctx, messages.BucketVerdicts)
		if err != nil {
			return nil, fmt.Errorf("verdict cache: bucket %s: %w", messages.BucketVerdicts, err)
		}
		c.kv = kv
	}
	return c.kv, nil
}

// Get reads key; an entry that does not decode is an error (the caller
// checks the proof afresh).
func (c *KVCache) Get(ctx context.Context, key string) (*CachedVerdict, error) {
	kv, err := c.bucket(ctx)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verdict cache: get: %w", err)
	}
	var cv CachedVerdict
	dec := json.NewDecoder(bytes.NewReader(e.Value()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cv); err != nil || cv.Verdict == nil || cv.DecidedAt.IsZero() {
		return nil, fmt.Errorf("verdict cache: entry %s is malformed (%v)", key, err)
	}
	return &cv, nil
}

// Put creates key; an existing entry is kept.
func (c *KVCache) Put(ctx context.Context, key string, v *CachedVerdict) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("verdict cache: encode: %w", err)
	}
	kv, err := c.bucket(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Create(ctx, key, data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("verdict cache: put: %w", err)
	}
	return nil
}
