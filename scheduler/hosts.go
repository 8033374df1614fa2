package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// Hosts lists the host registry, sorted by pool then id. A host that
// stopped refreshing its entry drops out once the bucket's TTL passes.
func (c *Client) Hosts(ctx context.Context) ([]messages.HostInfo, error) {
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
		var h messages.HostInfo
		if err := json.Unmarshal(e.Value(), &h); err != nil {
			c.log.Warn().Err(err).Str("key", key).Msg("skipping a host entry that does not decode")
			continue
		}
		if h.ID == "" {
			h.ID = key
		}
		hosts = append(hosts, h)
	}
	slices.SortFunc(hosts, func(a, b messages.HostInfo) int {
		return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.ID, b.ID))
	})
	return hosts, nil
}
