package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"
	"github.com/warrenhq/warren/messages"
)

// PoolKeys finds the public curve key ("X...") a pool's workers open
// secrets with. It decides whom a task's secrets are readable by, so it
// must come from somewhere the submitter trusts (see docs/security.md).
type PoolKeys interface {
	PoolKey(ctx context.Context, pool string) (string, error)
}

// StaticPoolKeys are pinned keys: pool -> public key. The key under "" is
// used for any pool not listed.
type StaticPoolKeys map[string]string

// PoolKey returns the pinned key of pool.
func (s StaticPoolKeys) PoolKey(_ context.Context, pool string) (string, error) {
	k, ok := s[pool]
	if !ok {
		k, ok = s[""]
	}
	if !ok {
		return "", fmt.Errorf("no pool key for pool %q; pass --pool-key %s=X... (warren keys show --pool %s)", pool, pool, pool)
	}
	if !nkeys.IsValidPublicCurveKey(k) {
		return "", fmt.Errorf("pool key for pool %q is not a public curve key (X...)", pool)
	}
	return k, nil
}

// ParsePoolKeys reads --pool-key values: "X..." for every pool, or
// "pool=X..." for one.
func ParsePoolKeys(specs []string) (StaticPoolKeys, error) {
	keys := StaticPoolKeys{}
	for _, s := range specs {
		pool, key, found := strings.Cut(s, "=")
		if !found {
			pool, key = "", s
		}
		if !nkeys.IsValidPublicCurveKey(key) {
			return nil, fmt.Errorf("pool key %q is not a public curve key (X...); warren keys show prints one", s)
		}
		keys[pool] = key
	}
	return keys, nil
}

// seal encodes every task of b that has secrets, sealed to its pool's key
// with one ephemeral sender key for the batch. Nothing is published when a
// key is missing: the batch is refused with a *BatchError.
func (c *Client) seal(ctx context.Context, b *Batch) error {
	var sender nkeys.KeyPair
	be := &BatchError{}
	for i := range b.Tasks {
		t := &b.Tasks[i]
		if len(t.Secrets) == 0 || b.payloads[i] != nil {
			continue
		}
		fail := func(err error) {
			if !errors.Is(err, messages.ErrSecretsUnavailable) {
				err = &messages.Error{Code: messages.CodeSecretsUnavailable, Field: "secrets", Msg: err.Error()}
			}
			be.Errors = append(be.Errors, &LineError{b.lines[i], err})
		}
		if c.cfg.PoolKeys == nil {
			fail(fmt.Errorf("task has secrets but no pool key is configured; pass --pool-key (warren keys show prints it)"))
			continue
		}
		key, err := c.cfg.PoolKeys.PoolKey(ctx, t.EffectivePool())
		if err != nil {
			fail(err)
			continue
		}
		if sender == nil {
			if sender, err = nkeys.CreateCurveKeys(); err != nil {
				return fmt.Errorf("scheduler: sender key: %w", err)
			}
			defer sender.Wipe()
		}
		sealed, err := messages.SealSecrets(t, sender, key)
		if err != nil {
			be.Errors = append(be.Errors, &LineError{b.lines[i], err})
			continue
		}
		if b.payloads[i], err = encodeTask(sealed); err != nil {
			be.Errors = append(be.Errors, &LineError{b.lines[i], err})
		}
	}
	if len(be.Errors) > 0 {
		for i := range b.payloads {
			if len(b.Tasks[i].Secrets) > 0 {
				b.payloads[i] = nil
			}
		}
		return newBatchError(be.Errors, b.show)
	}
	return nil
}

// RegistryPoolKeys takes each pool's key from the seal keys its workers
// publish in the host registry. Every live host of the pool that has a key
// must publish the same one. Trusting it means trusting whoever may write
// the registry: with authentication on, only worker credentials can; on an
// open bus anyone can, so pin keys (StaticPoolKeys, PinnedPoolKeys) there.
type RegistryPoolKeys struct{ Client *Client }

// PoolKey returns the one seal key the pool's live hosts publish.
func (r RegistryPoolKeys) PoolKey(ctx context.Context, pool string) (string, error) {
	hosts, err := r.Client.Hosts(ctx)
	if err != nil {
		return "", err
	}
	return registryKey(hosts, pool)
}

// registryKey is the one seal key pool's hosts publish.
func registryKey(hosts []messages.HostInfo, pool string) (string, error) {
	key := ""
	for _, h := range hosts {
		switch {
		case h.Pool != pool || h.SealKey == "":
		case key == "":
			key = h.SealKey
		case key != h.SealKey:
			return "", fmt.Errorf("hosts of pool %q publish different seal keys (%s, %s); pin the right one with --pool-key or `warren keys pin`", pool, KeyFingerprint(key), KeyFingerprint(h.SealKey))
		}
	}
	if key == "" {
		return "", fmt.Errorf("no live host of pool %q publishes a seal key; start its workers with --seal-key, or pass --pool-key", pool)
	}
	if !nkeys.IsValidPublicCurveKey(key) {
		return "", fmt.Errorf("pool %q publishes %q, which is not a public curve key", pool, key)
	}
	return key, nil
}
