package broker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// fieldClass says who owns a field of a stream or bucket.
type fieldClass int

const (
	// guarantee fields carry Warren's guarantees (exactly one result per
	// attempt, dedup, replayable tasks, durability). Every process checks
	// them and refuses to start on a mismatch; `warren setup` fixes them.
	guarantee fieldClass = iota
	// tunable fields belong to the operator once a stream exists: only
	// `warren setup`, when told, changes them.
	tunable
)

func (c fieldClass) String() string {
	if c == guarantee {
		return "guarantee"
	}
	return "tunable"
}

// field is one compared field, named as `nats stream info --json` names it.
type field struct {
	name  string
	class fieldClass
	get   func(c *jetstream.StreamConfig) string
	set   func(dst, src *jetstream.StreamConfig)
}

// Fields streams and buckets share.
var (
	storageField = field{"storage", guarantee, func(c *jetstream.StreamConfig) string { return c.Storage.String() },
		func(d, s *jetstream.StreamConfig) { d.Storage = s.Storage }}
	replicasField = field{"num_replicas", tunable, func(c *jetstream.StreamConfig) string { return fmt.Sprint(max(c.Replicas, 1)) },
		func(d, s *jetstream.StreamConfig) { d.Replicas = s.Replicas }}
	maxBytesField = field{"max_bytes", tunable, func(c *jetstream.StreamConfig) string { return byteCount(c.MaxBytes) },
		func(d, s *jetstream.StreamConfig) { d.MaxBytes = s.MaxBytes }}
)

// streamFields are the compared fields of a stream. Anything not listed
// (placement, compression, metadata, ...) is the operator's and never
// touched.
var streamFields = []field{
	{"subjects", guarantee, func(c *jetstream.StreamConfig) string {
		s := slices.Clone(c.Subjects)
		slices.Sort(s)
		return strings.Join(s, ",")
	},
		func(d, s *jetstream.StreamConfig) { d.Subjects = s.Subjects }},
	{"retention", guarantee, func(c *jetstream.StreamConfig) string { return c.Retention.String() },
		func(d, s *jetstream.StreamConfig) { d.Retention = s.Retention }},
	{"discard", guarantee, func(c *jetstream.StreamConfig) string { return c.Discard.String() },
		func(d, s *jetstream.StreamConfig) { d.Discard = s.Discard }},
	{"max_msgs_per_subject", guarantee, func(c *jetstream.StreamConfig) string { return count(c.MaxMsgsPerSubject) },
		func(d, s *jetstream.StreamConfig) { d.MaxMsgsPerSubject = s.MaxMsgsPerSubject }},
	{"discard_new_per_subject", guarantee, func(c *jetstream.StreamConfig) string { return fmt.Sprint(c.DiscardNewPerSubject) },
		func(d, s *jetstream.StreamConfig) { d.DiscardNewPerSubject = s.DiscardNewPerSubject }},
	{"duplicate_window", guarantee, func(c *jetstream.StreamConfig) string { return c.Duplicates.String() },
		func(d, s *jetstream.StreamConfig) { d.Duplicates = s.Duplicates }},
	{"max_msg_size", tunable, func(c *jetstream.StreamConfig) string { return byteCount(int64(c.MaxMsgSize)) },
		func(d, s *jetstream.StreamConfig) { d.MaxMsgSize = s.MaxMsgSize }},
	storageField,
	replicasField,
	{"max_age", tunable, func(c *jetstream.StreamConfig) string { return age(c.MaxAge) },
		func(d, s *jetstream.StreamConfig) { d.MaxAge = s.MaxAge }},
	maxBytesField,
	// A tenant's quota sets these on its streams (tenants.go); the fleet's
	// streams leave them unlimited.
	{"max_msgs", tunable, func(c *jetstream.StreamConfig) string { return count(c.MaxMsgs) },
		func(d, s *jetstream.StreamConfig) { d.MaxMsgs = s.MaxMsgs }},
	{"max_consumers", tunable, func(c *jetstream.StreamConfig) string { return count(int64(c.MaxConsumers)) },
		func(d, s *jetstream.StreamConfig) { d.MaxConsumers = s.MaxConsumers }},
}

// bucketFields are the compared fields of a KV bucket, read from its
// backing stream. The TTL is a guarantee: host registry entries must
// expire for a dead host to leave it.
var bucketFields = []field{
	{"history", guarantee, func(c *jetstream.StreamConfig) string { return fmt.Sprint(c.MaxMsgsPerSubject) },
		func(d, s *jetstream.StreamConfig) { d.MaxMsgsPerSubject = s.MaxMsgsPerSubject }},
	{"ttl", guarantee, func(c *jetstream.StreamConfig) string { return age(c.MaxAge) },
		func(d, s *jetstream.StreamConfig) { d.MaxAge = s.MaxAge }},
	storageField,
	replicasField,
	maxBytesField,
}

// objectFields are the compared fields of an object store (large task
// outputs): nothing Warren's guarantees rest on but its storage; its TTL
// is the operator's.
var objectFields = []field{
	{"ttl", tunable, func(c *jetstream.StreamConfig) string { return age(c.MaxAge) },
		func(d, s *jetstream.StreamConfig) { d.MaxAge = s.MaxAge }},
	storageField,
	replicasField,
	maxBytesField,
}

func (r resource) fields() []field {
	switch {
	case r.bucket != nil:
		return bucketFields
	case r.object != nil:
		return objectFields
	}
	return streamFields
}

func count(n int64) string {
	if n <= 0 { // the server stores 0 as -1
		return "unlimited"
	}
	return fmt.Sprint(n)
}

func age(d time.Duration) string {
	if d <= 0 {
		return "unlimited"
	}
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// byteCount prints a byte size the way --max-bytes accepts it.
func byteCount(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// Change is one field of one stream or bucket whose value on the server
// differs from what Warren wants (Have is "" for a resource to create).
type Change struct {
	Kind  string // "stream" or "bucket"
	Name  string // stream or bucket name
	Field string // as `nats stream info --json` names it; "" when creating
	Class string // "guarantee" or "tunable"
	Have  string
	Want  string
}

func (c Change) String() string {
	if c.Field == "" {
		return fmt.Sprintf("%s %s: create (%s)", c.Kind, c.Name, c.Want)
	}
	return fmt.Sprintf("%s %s: %s %s -> %s", c.Kind, c.Name, c.Field, c.Have, c.Want)
}

// diff lists the fields of the given classes where have differs from want.
func (r resource) diff(have, want *jetstream.StreamConfig, classes ...fieldClass) []Change {
	var out []Change
	for _, f := range r.fields() {
		if !slices.Contains(classes, f.class) {
			continue
		}
		if h, w := f.get(have), f.get(want); h != w {
			out = append(out, Change{Kind: r.kind(), Name: r.name(), Field: f.name, Class: f.class.String(), Have: h, Want: w})
		}
	}
	return out
}

// summary describes a resource to create by its compared fields.
func (r resource) summary(want *jetstream.StreamConfig) string {
	var parts []string
	for _, f := range r.fields() {
		parts = append(parts, f.name+"="+f.get(want))
	}
	return strings.Join(parts, " ")
}

// IncompatibleError is returned by Setup when an existing stream or bucket
// differs from Warren's in a field its guarantees rest on.
type IncompatibleError struct {
	Changes []Change
}

func (e *IncompatibleError) Error() string {
	var b strings.Builder
	b.WriteString("broker: the NATS streams are not compatible with this Warren; it refuses to run on them:")
	for _, c := range e.Changes {
		fmt.Fprintf(&b, "\n  %s %s: %s is %s, Warren needs %s", c.Kind, c.Name, c.Field, c.Have, c.Want)
	}
	b.WriteString("\nrun `warren setup --dry-run` to see the changes and `warren setup` to make them (an admin step; it keeps replicas, max age and max bytes unless told)")
	return b.String()
}
