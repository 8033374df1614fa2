package broker

import (
	"cmp"
	"context"
	"fmt"
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

// Setup creates or updates every stream and bucket Warren uses. It is
// idempotent: every process calls it at start.
func Setup(ctx context.Context, js jetstream.JetStream, c StreamConfig) error {
	c = c.withDefaults()
	streams := []jetstream.StreamConfig{
		{
			Name:        messages.StreamTasks,
			Description: "Warren tasks; Limits retention so batches can be replayed",
			Subjects:    []string{messages.SubjectTasksPrefix + ".>"},
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
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("broker: set up stream %s: %w", sc.Name, err)
		}
	}
	buckets := []jetstream.KeyValueConfig{
		{Bucket: messages.BucketHosts, Description: "Warren host registry", TTL: c.HostTTL, History: 1, Storage: c.Storage, Replicas: c.Replicas},
		{Bucket: messages.BucketCancel, Description: "Warren cancelled batches and tasks", TTL: c.ResultMaxAge, History: 1, Storage: c.Storage, Replicas: c.Replicas},
		{Bucket: messages.BucketBatches, Description: "Warren batch manifests: task counts per attempt", TTL: c.TaskMaxAge, History: 1, Storage: c.Storage, Replicas: c.Replicas},
		{Bucket: messages.BucketVerdicts, Description: "Warren verdict cache: decided verdicts by content hash", TTL: c.ResultMaxAge, History: 1, Storage: c.Storage, Replicas: c.Replicas},
	}
	for _, kc := range buckets {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("broker: set up bucket %s: %w", kc.Bucket, err)
		}
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
