package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// EnvReplicas names the environment variable that sets the replicas of
// streams and buckets Warren creates (StreamConfig.Replicas wins).
const EnvReplicas = "WARREN_REPLICAS"

// Setup is what every Warren process calls at start: it creates the
// streams and buckets that are missing, and checks those that exist. A
// stream or bucket that differs in a guarantee field (see fields.go) is an
// *IncompatibleError naming it, the field, what it has and what Warren
// needs; tunables (replicas, max age, max bytes, placement, anything not
// compared) are never changed: they are the operator's, and only Apply
// (`warren setup`) changes them. Safe to call from many processes at once.
func Setup(ctx context.Context, js jetstream.JetStream, c StreamConfig) error {
	rs, err := wanted(ctx, js, c)
	if err != nil {
		return err
	}
	// Every process starts with this, a one-off client command too: look
	// the resources up at once (one round trip, not one per resource).
	haves := make([]*jetstream.StreamConfig, len(rs))
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { haves[i], errs[i] = ensure(ctx, js, r) })
	}
	wg.Wait()
	var bad []Change
	for i, r := range rs {
		if errs[i] != nil {
			return errs[i]
		}
		want := r.want()
		bad = append(bad, r.diff(haves[i], &want, guarantee)...)
	}
	if len(bad) > 0 {
		return &IncompatibleError{Changes: bad}
	}
	return nil
}

// wanted is the resource table with c's overrides and the replicas chosen.
func wanted(ctx context.Context, js jetstream.JetStream, c StreamConfig) ([]resource, error) {
	replicas, err := Replicas(ctx, js, c.Replicas)
	if err != nil {
		return nil, err
	}
	rs := resources(c)
	for _, r := range rs {
		r.applyOverrides(c, replicas)
	}
	return rs, nil
}

// ensure returns the configuration of r's stream on the server, creating
// it as wanted when it is missing.
func ensure(ctx context.Context, js jetstream.JetStream, r resource) (*jetstream.StreamConfig, error) {
	s, err := js.Stream(ctx, r.streamName())
	if err == nil {
		return &s.CachedInfo().Config, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("broker: look up %s %s: %w", r.kind(), r.name(), err)
	}
	if err := create(ctx, js, r); err != nil {
		// Another process may have created it meanwhile: check that one.
		if s, lerr := js.Stream(ctx, r.streamName()); lerr == nil {
			return &s.CachedInfo().Config, nil
		}
		return nil, err
	}
	s, err = js.Stream(ctx, r.streamName())
	if err != nil {
		return nil, fmt.Errorf("broker: look up %s %s: %w", r.kind(), r.name(), err)
	}
	return &s.CachedInfo().Config, nil
}

func create(ctx context.Context, js jetstream.JetStream, r resource) error {
	var err error
	switch {
	case r.bucket != nil:
		_, err = js.CreateKeyValue(ctx, *r.bucket)
	case r.object != nil:
		_, err = js.CreateObjectStore(ctx, *r.object)
	default:
		_, err = js.CreateStream(ctx, *r.stream)
	}
	if err != nil {
		want := r.want()
		return fmt.Errorf("broker: create %s %s (%s): %w%s", r.kind(), r.name(), r.summary(&want), err, createHint(err))
	}
	return nil
}

// createHint says what to do about the usual reasons a create fails.
func createHint(err error) string {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return ""
	}
	switch apiErr.ErrorCode {
	case jsErrCodeInsufficientResources, jsErrCodeStorageResourcesExceeded, jsErrCodeMemoryResourcesExceeded:
		return "; the server has less JetStream storage than the byte limits reserve: raise max_file_store in its jetstream block, or run `warren setup --max-bytes SIZE` with a smaller size"
	case jsErrCodeReplicasNotSupported, jsErrCodeNoSuitablePeers:
		return "; the cluster has fewer JetStream servers than the replicas asked for: set --replicas / " + EnvReplicas + " to at most its size"
	}
	return ""
}

// JetStream API error codes (server/errors.json) Warren explains.
const (
	jsErrCodeInsufficientResources    = 10023
	jsErrCodeMemoryResourcesExceeded  = 10028
	jsErrCodeStorageResourcesExceeded = 10047
	jsErrCodeReplicasNotSupported     = 10074
	jsErrCodeNoSuitablePeers          = 10005
)

// Replicas is the replica count for a stream or bucket Warren creates:
// explicit when > 0, else EnvReplicas, else min(3, cluster size).
func Replicas(ctx context.Context, js jetstream.JetStream, explicit int) (int, error) {
	if explicit > 0 {
		return explicit, nil
	}
	if v := os.Getenv(EnvReplicas); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5 {
			return 0, fmt.Errorf("%s=%q: want a replica count from 1 to 5", EnvReplicas, v)
		}
		return n, nil
	}
	return min(3, ClusterSize(js)), nil
}

// ClusterSize is how many servers the connected server's cluster has, as
// its INFO tells clients: 1 when it is not clustered, else the number of
// distinct client URLs it advertises (connect_urls). A cluster configured
// with no_advertise looks like one server: set the replicas explicitly
// there.
func ClusterSize(js jetstream.JetStream) int {
	nc := js.Conn()
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	hosts := map[string]bool{}
	for _, s := range nc.Servers() {
		if u, err := url.Parse(s); err == nil {
			hosts[u.Host] = true
		}
	}
	if u, err := url.Parse(nc.ConnectedUrl()); err == nil && nc.ConnectedUrl() != "" {
		hosts[u.Host] = true
	}
	return max(len(hosts), 1)
}

// ConsumerConfig tunes the durable pull consumer of a pool and profile.
type ConsumerConfig struct {
	// AckWait is how long a delivered task may go without an ack or a
	// heartbeat before it is redelivered. Workers heartbeat at a third of
	// it. It also bounds how long a batch waits for a delivery that was
	// lost with a cluster node (sent by a dying consumer leader, never
	// received): that task comes back after AckWait. Defaults to 10s
	// (docs/benchmarks.md, cluster section).
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one task (crashes, infrastructure
	// errors); the last failure dead-letters it. Defaults to 5.
	MaxDeliver int
	// MaxAckPending caps tasks in flight across the whole pool. Capacity is
	// decided on the hosts (each pulls only for free slots), so this is a
	// safety net. Defaults to 100000.
	MaxAckPending int
}

// WithDefaults fills zero fields.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	c.AckWait = cmp.Or(c.AckWait, 10*time.Second)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, 5)
	c.MaxAckPending = cmp.Or(c.MaxAckPending, 100000)
	return c
}

// EnsureConsumer creates or updates the durable consumer a pool's workers
// share for one profile. Consumers are the workers' own (their flags set
// AckWait and MaxDeliver), not `warren setup`'s: it cannot know the pools
// and profiles. A consumer's replicas follow its stream's.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, pool, profile string, c ConsumerConfig) (jetstream.Consumer, error) {
	return EnsureTaskConsumer(ctx, js, messages.Namespace{}, pool, profile, c)
}

// EnsureTaskConsumer is EnsureConsumer on namespace ns's task stream (a
// tenant's own, or the fleet's).
func EnsureTaskConsumer(ctx context.Context, js jetstream.JetStream, ns messages.Namespace, pool, profile string, c ConsumerConfig) (jetstream.Consumer, error) {
	c = c.WithDefaults()
	name := messages.ConsumerName(pool, profile)
	cfg := jetstream.ConsumerConfig{
		Durable:       name,
		Description:   fmt.Sprintf("Warren workers of pool %s, profile %s", pool, profile),
		FilterSubject: messages.TaskFilter(pool, profile),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxDeliver:    c.MaxDeliver,
		MaxAckPending: c.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	// The JetStream API can be briefly without a responder (a server that
	// just reloaded its accounts, a meta leader being elected): retry that,
	// and only that, until ctx ends.
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		cons, err := js.CreateOrUpdateConsumer(ctx, ns.Tasks(), cfg)
		if err == nil {
			return cons, nil
		}
		if !errors.Is(err, nats.ErrNoResponders) || ctx.Err() != nil {
			return nil, fmt.Errorf("broker: set up consumer %s on %s: %w", name, ns.Tasks(), err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("broker: set up consumer %s on %s: %w", name, ns.Tasks(), err)
		case <-time.After(backoff):
		}
	}
}

// Missing lists, by name, the streams, buckets and object stores Warren
// owns that the server does not have (yet): empty once Setup or `warren
// setup` has run to its end.
func Missing(ctx context.Context, js jetstream.JetStream) ([]string, error) {
	var missing []string
	for _, r := range resources(StreamConfig{}) {
		_, err := js.Stream(ctx, r.streamName())
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			missing = append(missing, r.name())
		case err != nil:
			return nil, fmt.Errorf("broker: look up %s %s: %w", r.kind(), r.name(), err)
		}
	}
	return missing, nil
}
