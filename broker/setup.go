package broker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// StreamConfig sizes the streams and buckets. Zero fields take defaults.
type StreamConfig struct {
	// TaskMaxAge is how long tasks stay replayable. Defaults to 7 days.
	TaskMaxAge time.Duration
	// ResultMaxAge is how long results are kept. Defaults to 7 days.
	ResultMaxAge time.Duration
	// DLQMaxAge is how long dead letters are kept. Defaults to 30 days.
	DLQMaxAge time.Duration
	// DuplicateWindow is how long a task or result id is remembered for
	// deduplication. Defaults to 10 minutes.
	DuplicateWindow time.Duration
	// HostTTL is how long a host registry entry lives without a refresh.
	// Defaults to 30s.
	HostTTL time.Duration
	// Replicas for every stream and bucket (3 on a real cluster). Defaults to 1.
	Replicas int
	// Storage is file or memory. Defaults to file.
	Storage jetstream.StorageType
}

func (c StreamConfig) withDefaults() StreamConfig {
	c.TaskMaxAge = cmp.Or(c.TaskMaxAge, 7*24*time.Hour)
	c.ResultMaxAge = cmp.Or(c.ResultMaxAge, 7*24*time.Hour)
	c.DLQMaxAge = cmp.Or(c.DLQMaxAge, 30*24*time.Hour)
	c.DuplicateWindow = cmp.Or(c.DuplicateWindow, 10*time.Minute)
	c.HostTTL = cmp.Or(c.HostTTL, 30*time.Second)
	c.Replicas = cmp.Or(c.Replicas, 1)
	return c
}

// TaskSubjects are the subjects of WARREN_TASKS: only well-formed task
// subjects, warren.tasks.<pool>.<profile>.<batch> where the batch is one
// token or a tenant's two (<tenant>.<name>).
var TaskSubjects = []string{messages.SubjectTasksPrefix + ".*.*.*", messages.SubjectTasksPrefix + ".*.*.*.*"}

// Setup creates or updates every stream and bucket Warren uses. It is
// idempotent: every process calls it at start. A stream or bucket that
// already has the wanted configuration is left alone, so a role that may
// only read stream info (workers, under auth) can call it on a broker the
// admin has set up.
func Setup(ctx context.Context, js jetstream.JetStream, c StreamConfig) error {
	c = c.withDefaults()
	streams := []jetstream.StreamConfig{
		{
			Name:        messages.StreamTasks,
			Description: "Warren tasks; Limits retention so batches can be replayed",
			// Exactly warren.tasks.<pool>.<profile>.<batch>: a task on any
			// other subject under the prefix would be stored for MaxAge and
			// never consumed, so the stream does not take it (the publisher
			// gets no ack: "no responders").
			Subjects:    TaskSubjects,
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      c.TaskMaxAge,
			Duplicates:  c.DuplicateWindow,
			Storage:     c.Storage,
			Replicas:    c.Replicas,
			AllowDirect: true,
		},
		{
			Name:        messages.StreamResults,
			Description: "Warren results: one per task attempt, enforced by MaxMsgsPerSubject",
			Subjects:    []string{messages.SubjectResultsPrefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      c.ResultMaxAge,
			// A second result for the same subject is refused, not stored.
			MaxMsgsPerSubject:    1,
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			Duplicates:           c.DuplicateWindow,
			Storage:              c.Storage,
			Replicas:             c.Replicas,
			AllowDirect:          true,
		},
		{
			Name:        messages.StreamDLQ,
			Description: "Warren dead letters: refused or undeliverable tasks with their payload",
			Subjects:    []string{messages.SubjectDLQPrefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      c.DLQMaxAge,
			Storage:     c.Storage,
			Replicas:    c.Replicas,
		},
	}
	for _, sc := range streams {
		if streamUpToDate(ctx, js, sc.Name, sc) {
			continue
		}
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("broker: set up stream %s: %w%s", sc.Name, err, setupHint)
		}
	}
	buckets := []jetstream.KeyValueConfig{
		{Bucket: messages.BucketHosts, Description: "Warren host registry", TTL: c.HostTTL, History: 1, Storage: c.Storage, Replicas: c.Replicas},
		{Bucket: messages.BucketCancel, Description: "Warren cancelled batches and tasks", TTL: c.ResultMaxAge, History: 1, Storage: c.Storage, Replicas: c.Replicas},
		{Bucket: messages.BucketBatches, Description: "Warren batch manifests: task counts per attempt", TTL: c.TaskMaxAge, History: 1, Storage: c.Storage, Replicas: c.Replicas},
		// Claims carry a per-key TTL set by the claiming worker (its
		// AckWait); LimitMarkerTTL enables it and keeps expiry markers a
		// minute.
		{Bucket: messages.BucketClaims, Description: "Warren task-attempt claims: which worker runs an attempt", History: 1, LimitMarkerTTL: time.Minute, Storage: c.Storage, Replicas: c.Replicas},
	}
	for _, kc := range buckets {
		want := jetstream.StreamConfig{
			Description: kc.Description, MaxAge: kc.TTL, MaxMsgsPerSubject: int64(kc.History),
			Discard: jetstream.DiscardNew, AllowDirect: true,
			Storage: kc.Storage, Replicas: kc.Replicas,
		}
		if streamUpToDate(ctx, js, "KV_"+kc.Bucket, want) {
			continue
		}
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("broker: set up bucket %s: %w%s", kc.Bucket, err, setupHint)
		}
	}
	// An existing store is left alone (a worker may not update streams).
	if _, err := js.ObjectStore(ctx, messages.BucketOutputs); err == nil {
		return nil
	}
	if _, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: messages.BucketOutputs, Description: "Warren result outputs too large for the result message",
		TTL: c.ResultMaxAge, Storage: c.Storage, Replicas: c.Replicas,
	}); err != nil {
		return fmt.Errorf("broker: set up object store %s: %w", messages.BucketOutputs, err)
	}
	return nil
}

// ConsumerConfig tunes the durable pull consumer of a pool and profile.
type ConsumerConfig struct {
	// AckWait is how long a delivered task may go without an ack or a
	// heartbeat before it is redelivered. Workers heartbeat at a third of
	// it. Defaults to 30s.
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
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.MaxDeliver = cmp.Or(c.MaxDeliver, 5)
	c.MaxAckPending = cmp.Or(c.MaxAckPending, 100000)
	return c
}

// EnsureConsumer creates or updates the durable consumer a pool's workers
// share for one profile.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, pool, profile string, c ConsumerConfig) (jetstream.Consumer, error) {
	c = c.WithDefaults()
	name := messages.ConsumerName(pool, profile)
	cons, err := js.CreateOrUpdateConsumer(ctx, messages.StreamTasks, jetstream.ConsumerConfig{
		Durable:       name,
		Description:   fmt.Sprintf("Warren workers of pool %s, profile %s", pool, profile),
		FilterSubject: messages.TaskFilter(pool, profile),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxDeliver:    c.MaxDeliver,
		MaxAckPending: c.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: set up consumer %s: %w", name, err)
	}
	return cons, nil
}

// setupHint follows a setup error: the usual cause on an authenticated
// broker is a role that may not change streams meeting streams that are
// missing or differ.
const setupHint = " (on an authenticated broker only the admin may create or change streams: start `warren broker --auth-dir` first, or run a command once with admin creds)"

// streamUpToDate reports whether stream name exists with every field want
// sets (zero fields are the server's to choose).
func streamUpToDate(ctx context.Context, js jetstream.JetStream, name string, want jetstream.StreamConfig) bool {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return false
	}
	have := s.CachedInfo().Config
	set := func(w, h any, zero bool) bool { return zero || w == h }
	return have.Description == want.Description &&
		(want.Subjects == nil || slices.Equal(have.Subjects, want.Subjects)) &&
		have.Retention == want.Retention && have.MaxAge == want.MaxAge &&
		have.Storage == want.Storage && have.Replicas == want.Replicas &&
		set(want.Duplicates, have.Duplicates, want.Duplicates == 0) &&
		set(want.MaxMsgsPerSubject, have.MaxMsgsPerSubject, want.MaxMsgsPerSubject == 0) &&
		have.Discard == want.Discard && have.DiscardNewPerSubject == want.DiscardNewPerSubject &&
		have.AllowDirect == want.AllowDirect
}
