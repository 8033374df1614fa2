package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// Tenant is one tenant as the admin set it up: its name (its batches are
// "<name>.<batch>") and its quota.
type Tenant struct {
	Name  string
	Quota messages.TenantQuota
}

// tenantResources are tenant's namespace (messages.Namespace) with the
// limits of its quota; every other field as the fleet's own.
func tenantResources(c StreamConfig, t Tenant, replicas int) []resource {
	q := t.Quota.WithDefaults()
	rs := namespaceResources(messages.Namespace{Tenant: t.Name}, c.withDefaults())
	for i := range rs {
		r := &rs[i]
		r.applyOverrides(c, replicas)
		r.quota = true
		switch {
		case r.stream != nil && r.stream.Name == messages.Namespace{Tenant: t.Name}.Tasks():
			r.stream.MaxBytes, r.stream.MaxMsgs = q.TaskBytes, q.TaskMsgs
		case r.stream != nil && r.stream.Name == messages.Namespace{Tenant: t.Name}.Results():
			r.stream.MaxBytes, r.stream.MaxConsumers = q.ResultBytes, q.Consumers
		case r.stream != nil:
			r.stream.MaxBytes = q.DeadBytes
		case r.object != nil && r.object.Bucket == messages.Namespace{Tenant: t.Name}.Inputs():
			r.object.MaxBytes = q.InputBytes
		case r.object != nil:
			r.object.MaxBytes = q.OutputBytes
		case r.bucket.Bucket == messages.Namespace{Tenant: t.Name}.Batches():
			r.bucket.MaxBytes = q.ManifestBytes
		case r.bucket.Bucket == messages.Namespace{Tenant: t.Name}.Cancel():
			r.bucket.MaxBytes = q.CancelBytes
		default:
			r.bucket.MaxBytes = q.VerdictBytes
		}
	}
	return rs
}

// SetupTenants is the admin's step for tenants (`warren setup --auth-dir`,
// and `warren broker --auth-dir` whenever its directory changes): it
// creates each tenant's namespace, its own streams and buckets with the
// limits of its quota, brings existing ones to their quota's limits and
// Warren's guarantees, and records the quota in warren_tenants for the
// workers. It returns the changes, one per field; with dryRun it changes
// nothing. A tenant's limits are its quota's, so unlike the fleet's own
// tunables they are always set.
func SetupTenants(ctx context.Context, js jetstream.JetStream, c StreamConfig, tenants []Tenant, dryRun bool) ([]Change, error) {
	replicas, err := Replicas(ctx, js, c.Replicas)
	if err != nil {
		return nil, err
	}
	var all []Change
	for _, t := range tenants {
		if err := t.Quota.Validate(); err != nil {
			return all, fmt.Errorf("broker: tenant %s: %w", t.Name, err)
		}
		if !messages.ValidID(t.Name) {
			return all, fmt.Errorf("broker: tenant %q: not a tenant name", t.Name)
		}
		for _, r := range tenantResources(c, t, replicas) {
			ch, err := apply(ctx, js, c, r, dryRun)
			all = append(all, ch...)
			if err != nil {
				return all, err
			}
		}
		ch, err := recordQuota(ctx, js, t, dryRun)
		all = append(all, ch...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// recordQuota writes t's quota into warren_tenants when it differs.
func recordQuota(ctx context.Context, js jetstream.JetStream, t Tenant, dryRun bool) ([]Change, error) {
	q := t.Quota.WithDefaults()
	want, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, messages.BucketTenants)
	if err != nil {
		return nil, fmt.Errorf("broker: open %s (run `warren setup` first): %w", messages.BucketTenants, err)
	}
	have, err := kv.Get(ctx, t.Name)
	switch {
	case err == nil && string(have.Value()) == string(want):
		return nil, nil
	case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, fmt.Errorf("broker: read tenant %s: %w", t.Name, err)
	}
	ch := []Change{{Kind: "tenant", Name: t.Name, Field: "quota", Class: "quota", Want: q.String()}}
	if err == nil {
		var old messages.TenantQuota
		_ = json.Unmarshal(have.Value(), &old)
		ch[0].Have = old.String()
	}
	if dryRun {
		return ch, nil
	}
	if _, err := kv.Put(ctx, t.Name, want); err != nil {
		return ch, fmt.Errorf("broker: record tenant %s: %w", t.Name, err)
	}
	return ch, nil
}

// Tenants reads every tenant's quota from warren_tenants, by name.
func Tenants(ctx context.Context, js jetstream.JetStream) (map[string]messages.TenantQuota, error) {
	kv, err := js.KeyValue(ctx, messages.BucketTenants)
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return map[string]messages.TenantQuota{}, nil
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	out := map[string]messages.TenantQuota{}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue
		}
		q, err := DecodeQuota(e.Value())
		if err != nil {
			return nil, fmt.Errorf("broker: tenant %s: %w", k, err)
		}
		out[k] = q
	}
	return out, nil
}

// DecodeQuota reads a warren_tenants value strictly.
func DecodeQuota(data []byte) (messages.TenantQuota, error) {
	var q messages.TenantQuota
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return q, fmt.Errorf("quota: %w", err)
	}
	return q.WithDefaults(), q.Validate()
}
