package scheduler

import (
	"context"
	"fmt"

	"github.com/warrenhq/warren/messages"
)

// PinnedPoolKeys takes each pool's key from the host registry, as
// RegistryPoolKeys does, trusting it on first use only: the first key a
// pool's workers publish is pinned in Pins, and from then on every live
// host of the pool that publishes a seal key must publish the pinned one,
// else the task is refused with a *SealKeyMismatchError and nothing is
// published. A key pinned explicitly (`warren keys pin`) is held to the
// same rule. This holds with or without authentication: whoever may write
// a registry entry of the pool (on an open bus anyone, under auth a
// worker of the pool) can publish a key of their own, but not make a
// client that pinned the pool's key seal to it.
type PinnedPoolKeys struct {
	Client *Client
	Pins   PinStore
	// Broker names the broker in errors (the URL the client dialed).
	Broker string
	// OnFirstUse, when set, is told of each pin made on first use.
	OnFirstUse func(pool string, pin Pin)
	// Repin is the command that pins key for pool, shown in a refusal.
	// Defaults to "warren keys pin --pool POOL KEY".
	Repin func(pool, key string) string
}

// PoolKey returns the pool's pinned key, pinning the registry's on first
// use, once the live hosts agree with it.
func (p PinnedPoolKeys) PoolKey(ctx context.Context, pool string) (string, error) {
	hosts, err := p.Client.Hosts(ctx)
	if err != nil {
		return "", err
	}
	pin, ok, err := p.Pins.Pinned(pool)
	if err != nil {
		return "", err
	}
	if !ok {
		key, err := registryKey(hosts, pool)
		if err != nil {
			return "", err
		}
		created := false
		if pin, created, err = p.Pins.PinFirst(pool, key); err != nil {
			return "", err
		}
		if created && p.OnFirstUse != nil {
			p.OnFirstUse(pool, pin)
		}
	}
	return p.checkPinned(hosts, pool, pin)
}

// checkPinned refuses the pin when a live host of pool publishes another
// seal key, or none does.
func (p PinnedPoolKeys) checkPinned(hosts []messages.HostInfo, pool string, pin Pin) (string, error) {
	found := false
	for _, h := range hosts {
		if h.Pool != pool || h.SealKey == "" {
			continue
		}
		if h.SealKey != pin.Key {
			return "", &SealKeyMismatchError{Broker: p.Broker, Pool: pool, Host: h.ID, Pinned: pin, Found: h.SealKey, Repin: p.repin(pool, h.SealKey)}
		}
		found = true
	}
	if !found {
		return "", fmt.Errorf("no live host of pool %q publishes a seal key; start its workers with --seal-key", pool)
	}
	return pin.Key, nil
}

func (p PinnedPoolKeys) repin(pool, key string) string {
	if p.Repin != nil {
		return p.Repin(pool, key)
	}
	return fmt.Sprintf("warren keys pin --pool %s %s", pool, key)
}

// SealKeyMismatchError refuses to seal a pool's secrets: a live host of
// the pool publishes a seal key that is not the one the client pinned. It
// matches messages.ErrSecretsUnavailable under errors.Is.
type SealKeyMismatchError struct {
	Broker, Pool, Host string
	Pinned             Pin
	Found              string // the key the host publishes
	Repin              string // the command that pins Found
}

func (e *SealKeyMismatchError) Error() string {
	return fmt.Sprintf("%s: secrets: refusing to seal secrets for pool %q at %s: host %q publishes seal key %s, "+
		"but the pool's key was %s %s as %s. A new key is either the pool's operator rotating it or someone "+
		"else's key in the host registry, who could read the secrets. Check the new fingerprint with the operator "+
		"(`warren keys show --fingerprint --dir DIR --pool %s` where the pool's key is), and if it is theirs, pin it: %s",
		messages.CodeSecretsUnavailable, e.Pool, e.Broker, e.Host, KeyFingerprint(e.Found),
		e.Pinned.Source.describe(), e.Pinned.PinnedAt.Format("2006-01-02 15:04:05Z07:00"), KeyFingerprint(e.Pinned.Key),
		e.Pool, e.Repin)
}

// Is matches messages.ErrSecretsUnavailable: the batch is refused for
// want of a key to seal to.
func (e *SealKeyMismatchError) Is(target error) bool {
	return target == messages.ErrSecretsUnavailable
}
