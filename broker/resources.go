package broker

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// StreamConfig chooses what Warren creates when a stream or bucket is
// missing, and (for `warren setup`) what it changes. Zero fields take
// defaults.
type StreamConfig struct {
	// Replicas for every stream and bucket. 0 means: the WARREN_REPLICAS
	// environment variable when set, else min(3, cluster size) as the
	// server reports it. For an existing stream only Apply changes it, and
	// only when it is set.
	Replicas int
	// MaxAge overrides a stream's MaxAge by stream name (messages.Stream*;
	// the key "" applies to every stream). Defaults: tasks and results 7
	// days, dead letters 30 days. Buckets keep their TTLs.
	MaxAge map[string]time.Duration
	// MaxBytes overrides the byte limit by stream or bucket name (the key ""
	// applies to every stream). Defaults: see DefaultMaxBytes.
	MaxBytes map[string]int64
	// DuplicateWindow is how long a task or result id is remembered for
	// deduplication. Defaults to 10 minutes.
	DuplicateWindow time.Duration
	// HostTTL is how long a host registry entry lives without a refresh.
	// Defaults to 30s.
	HostTTL time.Duration
	// Storage is file or memory. Defaults to file.
	Storage jetstream.StorageType
}

// Byte limits a stream or bucket gets when it is created without an
// override. A full stream refuses new messages (DiscardNew): a submit
// fails with a StoreFullError instead of old, unrun tasks being dropped.
// Together they reserve 15.4 GiB per replica of the server's JetStream
// storage (max_file_store); FitStorage scales them to a smaller server.
var DefaultMaxBytes = map[string]int64{
	messages.StreamTasks:    4 << 30,
	messages.StreamResults:  4 << 30,
	messages.StreamDLQ:      1 << 30,
	messages.BucketHosts:    64 << 20,
	messages.BucketCancel:   64 << 20,
	messages.BucketBatches:  256 << 20,
	messages.BucketClaims:   64 << 20,
	messages.BucketVerdicts: 1 << 30,
	messages.BucketOutputs:  4 << 30,
	messages.BucketInputs:   1 << 30,
	messages.BucketTenants:  8 << 20,
}

// TaskMsgHeadroom is what a task message may carry on top of its encoded
// body (MaxTaskBytes): protocol headers. WARREN_TASKS's MaxMsgSize is
// their sum. A server with a smaller max_payload (a stock nats-server's
// 1 MiB) works too: the scheduler refuses a task over either limit at
// submit, naming it.
const TaskMsgHeadroom = 16 << 10

// MaxTaskMsgBytes is WARREN_TASKS's MaxMsgSize.
const MaxTaskMsgBytes = messages.MaxTaskBytes + TaskMsgHeadroom

func (c StreamConfig) withDefaults() StreamConfig {
	c.DuplicateWindow = cmp.Or(c.DuplicateWindow, 10*time.Minute)
	c.HostTTL = cmp.Or(c.HostTTL, 30*time.Second)
	return c
}

// resource is one stream, KV bucket or object store Warren owns, as Warren
// wants it (exactly one field is set). A bucket is a stream underneath
// (KV_<bucket>), an object store too (OBJ_<bucket>); each is compared and
// updated as its stream, and created with CreateKeyValue /
// CreateObjectStore.
type resource struct {
	stream *jetstream.StreamConfig
	bucket *jetstream.KeyValueConfig
	object *jetstream.ObjectStoreConfig
	// quota: a tenant's resource, whose limits (max bytes, messages,
	// consumers) are its quota's and always set by Apply.
	quota bool
}

// resources lists every stream and bucket of the fleet's own namespace
// and the shared ones, with their defaults. To add one, add an entry:
// every compared field (see fields.go) must be set explicitly, so what
// Warren wants is what the server stores. Replicas, Storage and the
// MaxAge/MaxBytes overrides are applied to every entry afterwards
// (applyOverrides). A tenant's namespace is the same table for its names
// (namespaceResources), with its quota's limits (tenants.go).
func resources(c StreamConfig) []resource {
	c = c.withDefaults()
	return append(namespaceResources(messages.Namespace{}, c), sharedResources(c)...)
}

// namespaceResources are the streams and buckets of one namespace
// (messages.Namespace): tasks, results, dead letters, manifests, cancels,
// outputs, inputs, verdicts.
func namespaceResources(ns messages.Namespace, c StreamConfig) []resource {
	week := 7 * 24 * time.Hour
	return []resource{
		{stream: &jetstream.StreamConfig{
			Name:        ns.Tasks(),
			Description: "Warren tasks; Limits retention so batches can be replayed",
			// Exactly warren.tasks.<pool>.<profile>.<batch> of this
			// namespace's batches: a task on any other subject under the
			// prefix would be stored for MaxAge and never consumed, so the
			// stream does not take it (the publisher gets no ack: "no
			// responders").
			Subjects:  ns.TaskSubjects(),
			Retention: jetstream.LimitsPolicy,
			// Full: refuse new tasks rather than drop old, unrun ones.
			Discard:           jetstream.DiscardNew,
			MaxMsgsPerSubject: -1,
			MaxAge:            week,
			MaxMsgSize:        MaxTaskMsgBytes,
			Duplicates:        c.DuplicateWindow,
			AllowDirect:       true,
		}},
		{stream: &jetstream.StreamConfig{
			Name:        ns.Results(),
			Description: "Warren results: one per task attempt, enforced by MaxMsgsPerSubject",
			Subjects:    ns.ResultSubjects(),
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      week,
			// A second result for the same subject is refused, not stored.
			MaxMsgsPerSubject:    1,
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			MaxMsgSize:           -1, // bounded by max_payload; workers trim output to fit
			Duplicates:           c.DuplicateWindow,
			AllowDirect:          true,
		}},
		{stream: &jetstream.StreamConfig{
			Name:        ns.DLQ(),
			Description: "Warren dead letters: refused or undeliverable tasks with their payload",
			Subjects:    ns.DLQSubjects(),
			Retention:   jetstream.LimitsPolicy,
			// Full: the oldest dead letters go first.
			Discard:           jetstream.DiscardOld,
			MaxMsgsPerSubject: -1,
			MaxAge:            30 * 24 * time.Hour,
			MaxMsgSize:        -1,
			Duplicates:        2 * time.Minute,
		}},
		{bucket: &jetstream.KeyValueConfig{Bucket: ns.Cancel(), Description: "Warren cancelled batches and tasks", TTL: week, History: 1}},
		{bucket: &jetstream.KeyValueConfig{Bucket: ns.Batches(), Description: "Warren batch manifests: task counts per attempt", TTL: week, History: 1}},
		{bucket: &jetstream.KeyValueConfig{Bucket: ns.Verdicts(), Description: "Warren verdict cache: decided verdicts by content hash", TTL: week, History: 1}},
		{object: &jetstream.ObjectStoreConfig{Bucket: ns.Outputs(), Description: "Warren result outputs too large for the result message", TTL: week}},
		{object: &jetstream.ObjectStoreConfig{Bucket: ns.Inputs(), Description: "Warren task inputs too large for the task message", TTL: week}},
	}
}

// sharedResources are written by workers and the admin only, never by a
// tenant: the host registry, the claims, the tenant registry.
func sharedResources(c StreamConfig) []resource {
	return []resource{
		{bucket: &jetstream.KeyValueConfig{Bucket: messages.BucketHosts, Description: "Warren host registry", TTL: c.HostTTL, History: 1}},
		// Claims carry a per-key TTL set by the claiming worker (its
		// AckWait); LimitMarkerTTL enables per-key TTLs and keeps expiry
		// markers a minute.
		{bucket: &jetstream.KeyValueConfig{Bucket: messages.BucketClaims, Description: "Warren task-attempt claims: which worker runs an attempt", History: 1, LimitMarkerTTL: time.Minute}},
		{bucket: &jetstream.KeyValueConfig{Bucket: messages.BucketTenants, Description: "Warren tenants and their quotas (written by the admin's setup)", History: 1}},
	}
}

// Names lists Warren's streams (kind "stream") and buckets ("bucket") by
// name, as `warren setup` accepts them.
func Names() map[string]string {
	out := map[string]string{}
	for _, r := range resources(StreamConfig{}) {
		out[r.name()] = r.kind()
	}
	return out
}

// name is the resource's stream or bucket name, as operators know it.
func (r resource) name() string {
	switch {
	case r.bucket != nil:
		return r.bucket.Bucket
	case r.object != nil:
		return r.object.Bucket
	}
	return r.stream.Name
}

// kind is "stream", "bucket" or "object store".
func (r resource) kind() string {
	switch {
	case r.bucket != nil:
		return "bucket"
	case r.object != nil:
		return "object store"
	}
	return "stream"
}

// streamName is the JetStream stream holding the resource.
func (r resource) streamName() string {
	switch {
	case r.bucket != nil:
		return "KV_" + r.bucket.Bucket
	case r.object != nil:
		return "OBJ_" + r.object.Bucket
	}
	return r.stream.Name
}

// applyOverrides sets replicas, storage and the configured limits.
func (r resource) applyOverrides(c StreamConfig, replicas int) {
	maxBytes := limitFor(c.MaxBytes, r.name(), r.stream != nil, DefaultMaxBytes[r.name()])
	switch {
	case r.bucket != nil:
		r.bucket.Replicas, r.bucket.Storage, r.bucket.MaxBytes = replicas, c.Storage, maxBytes
		return
	case r.object != nil:
		r.object.Replicas, r.object.Storage, r.object.MaxBytes = replicas, c.Storage, maxBytes
		return
	}
	r.stream.Replicas, r.stream.Storage, r.stream.MaxBytes = replicas, c.Storage, maxBytes
	r.stream.MaxAge = limitFor(c.MaxAge, r.name(), true, r.stream.MaxAge)
}

// limitFor is the override for name, else the all-streams one (key ""),
// else def.
func limitFor[T any](m map[string]T, name string, allApplies bool, def T) T {
	if v, ok := m[name]; ok {
		return v
	}
	if v, ok := m[""]; ok && allApplies {
		return v
	}
	return def
}

// overridden reports whether c sets a limit for the resource.
func overridden[T any](m map[string]T, name string, allApplies bool) bool {
	_, ok := m[name]
	_, all := m[""]
	return ok || (all && allApplies)
}

// want is the backing stream configuration in the compared fields: a
// bucket's fields mapped as CreateKeyValue maps them.
func (r resource) want() jetstream.StreamConfig {
	if r.stream != nil {
		return *r.stream
	}
	if o := r.object; o != nil {
		return jetstream.StreamConfig{
			Name:     "OBJ_" + o.Bucket,
			MaxAge:   o.TTL,
			MaxBytes: cmp.Or(o.MaxBytes, -1),
			Storage:  o.Storage,
			Replicas: max(o.Replicas, 1),
		}
	}
	b := r.bucket
	return jetstream.StreamConfig{
		Name:              "KV_" + b.Bucket,
		MaxMsgsPerSubject: int64(max(b.History, 1)),
		MaxAge:            b.TTL,
		MaxBytes:          cmp.Or(b.MaxBytes, -1),
		Storage:           b.Storage,
		Replicas:          max(b.Replicas, 1),
	}
}

// SetupDigest names the resource table this build wants (with the default
// overrides): a client that recorded that a server was set up with the
// same digest may skip Setup's lookups against that server (cmd/warren's
// setup stamp). A build that changes any resource has another digest.
//
// It is a constant, tableDigest's value, so that a client command does
// not encode the whole table to learn it (on its start: JSON's first
// look at each JetStream config type); TestSetupDigestIsTheTables
// fails, naming the new value, when the table changes.
func SetupDigest() string { return setupDigest }

const setupDigest = "2c8885534d4dfb7a5c7480f0"

// tableDigest hashes the resource table: what SetupDigest must return.
func tableDigest() string {
	var all []any
	for _, r := range resources(StreamConfig{}) {
		all = append(all, r.stream, r.bucket, r.object)
	}
	b, _ := json.Marshal(all)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
