package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ResourceStatus is what the server has of one stream, bucket or object
// store Warren owns, compared with what Warren needs: for `warren doctor`.
type ResourceStatus struct {
	Kind, Name string
	Missing    bool // not created yet (the first worker or `warren setup` creates it)
	Replicas   int
	// Incompatible lists the guarantee fields that differ: processes refuse
	// to start on them until `warren setup`.
	Incompatible []Change
	// Tunables lists the operator's fields that differ from Warren's
	// defaults (replicas, max age, max bytes): informational.
	Tunables []Change
}

// Check reports every resource Warren owns as the server has it, creating
// nothing and changing nothing. c chooses the defaults the tunables are
// compared with (replicas: c.Replicas, else WARREN_REPLICAS, else min(3,
// cluster size)).
func Check(ctx context.Context, js jetstream.JetStream, c StreamConfig) ([]ResourceStatus, error) {
	rs, err := wanted(ctx, js, c)
	if err != nil {
		return nil, err
	}
	var out []ResourceStatus
	for _, r := range rs {
		st := ResourceStatus{Kind: r.kind(), Name: r.name()}
		s, err := js.Stream(ctx, r.streamName())
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			st.Missing = true
		case err != nil:
			return out, fmt.Errorf("broker: look up %s %s: %w", r.kind(), r.name(), err)
		default:
			have, want := s.CachedInfo().Config, r.want()
			st.Replicas = max(have.Replicas, 1)
			st.Incompatible = r.diff(&have, &want, guarantee)
			st.Tunables = r.diff(&have, &want, tunable)
		}
		out = append(out, st)
	}
	return out, nil
}
