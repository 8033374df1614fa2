package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"github.com/warrenhq/warren/messages"
)

// Hosts lists the host registry, sorted by pool then id. A host that
// stopped refreshing its entry drops out once the bucket's TTL passes.
//
// It reads every entry in one request (a batch direct get of the last
// message of each key, nats-server 2.11 and later), so its cost does not
// grow with the fleet; on a server without batch gets, or with more
// entries than one batch answers, it lists the keys and reads each.
func (c *Client) Hosts(ctx context.Context) ([]messages.HostInfo, error) {
	hosts, err := c.hostsBatch(ctx)
	if errors.Is(err, errNoBatch) {
		c.log.Debug().Err(err).Msg("host registry: no batch read; listing the bucket's keys")
		hosts, err = c.hostsListed(ctx)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(hosts, func(a, b messages.HostInfo) int {
		return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.ID, b.ID))
	})
	return hosts, nil
}

// kvOperation is the header marking a KV delete or purge.
const kvOperation = "KV-Operation"

// errNoBatch means the registry cannot be read in one batch here.
var errNoBatch = errors.New("no batch direct get")

// hostsBatch reads the registry with one batch direct get.
func (c *Client) hostsBatch(ctx context.Context) ([]messages.HostInfo, error) {
	prefix := "$KV." + messages.BucketHosts + "."
	msgs, err := jetstreamext.GetLastMsgsFor(ctx, c.js, "KV_"+messages.BucketHosts, []string{prefix + ">"})
	if err != nil {
		return nil, fmt.Errorf("scheduler: read the host registry: %w", err)
	}
	var hosts []messages.HostInfo
	for m, err := range msgs {
		switch {
		case errors.Is(err, jetstreamext.ErrNoMessages):
			return nil, nil // an empty registry
		case errors.Is(err, jetstreamext.ErrBatchUnsupported):
			// Also what a 413 (more entries than a batch returns) decodes as.
			return nil, fmt.Errorf("%w: %w", errNoBatch, err)
		case err != nil:
			return nil, fmt.Errorf("scheduler: read the host registry: %w", err)
		}
		switch m.Header.Get(kvOperation) {
		case "DEL", "PURGE": // a removed entry's marker
			continue
		}
		if h, ok := c.hostEntry(strings.TrimPrefix(m.Subject, prefix), m.Data); ok {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// hostsListed reads the registry key by key (one round trip per host).
func (c *Client) hostsListed(ctx context.Context) ([]messages.HostInfo, error) {
	kv, err := c.bucket(ctx, messages.BucketHosts)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("scheduler: list hosts: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	var hosts []messages.HostInfo
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired or removed since it was listed
		}
		if err != nil {
			return nil, fmt.Errorf("scheduler: read host %s: %w", key, err)
		}
		if h, ok := c.hostEntry(key, e.Value()); ok {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// hostEntry decodes the registry entry of key.
func (c *Client) hostEntry(key string, data []byte) (messages.HostInfo, bool) {
	var h messages.HostInfo
	if err := json.Unmarshal(data, &h); err != nil {
		c.log.Warn().Err(err).Str("key", key).Msg("skipping a host entry that does not decode")
		return h, false
	}
	if h.ID == "" {
		h.ID = key
	}
	return h, true
}
