package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Apply is `warren setup`, the explicit, owned step: it creates the
// streams and buckets that are missing and updates existing ones: every
// guarantee field to Warren's value, and the tunables c sets explicitly
// (Replicas > 0, a MaxAge or MaxBytes entry) to those. A tunable c does
// not set keeps the server's value, and fields Warren does not compare
// (placement, compression, metadata) are never touched. It returns the
// changes, one per field; with dryRun it changes nothing and returns what
// it would change.
func Apply(ctx context.Context, js jetstream.JetStream, c StreamConfig, dryRun bool) ([]Change, error) {
	rs, err := wanted(ctx, js, c)
	if err != nil {
		return nil, err
	}
	var all []Change
	for _, r := range rs {
		changes, err := apply(ctx, js, c, r, dryRun)
		all = append(all, changes...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

func apply(ctx context.Context, js jetstream.JetStream, c StreamConfig, r resource, dryRun bool) ([]Change, error) {
	want := r.want()
	s, err := js.Stream(ctx, r.streamName())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		ch := []Change{{Kind: r.kind(), Name: r.name(), Want: r.summary(&want)}}
		if dryRun {
			return ch, nil
		}
		return ch, create(ctx, js, r)
	}
	if err != nil {
		return nil, fmt.Errorf("broker: look up %s %s: %w", r.kind(), r.name(), err)
	}
	have := s.CachedInfo().Config
	target := have
	isStream := r.stream != nil
	for _, f := range r.fields() {
		set := f.class == guarantee
		switch f.name {
		case "num_replicas":
			set = c.Replicas > 0
		case "max_age":
			set = overridden(c.MaxAge, r.name(), isStream)
		case "max_bytes":
			set = r.quota || overridden(c.MaxBytes, r.name(), isStream)
		case "max_msgs", "max_consumers":
			set = r.quota
		}
		if set {
			f.set(&target, &want)
		}
	}
	changes := r.diff(&have, &target, guarantee, tunable)
	if len(changes) == 0 || dryRun {
		return changes, nil
	}
	if have.Storage != target.Storage {
		return changes, fmt.Errorf("broker: %s %s: storage %s cannot be changed in place: back it up (`nats stream backup %s DIR`), delete it, run `warren setup`, then restore the messages",
			r.kind(), r.name(), have.Storage, r.streamName())
	}
	if _, err := js.UpdateStream(ctx, target); err != nil {
		return changes, fmt.Errorf("broker: update %s %s: %w%s", r.kind(), r.name(), err, createHint(err))
	}
	return changes, nil
}
