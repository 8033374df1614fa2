package messages

import (
	"cmp"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// TenantQuota bounds one tenant on a shared fleet. The byte and message
// limits are the limits of the tenant's namespace (its own streams and
// buckets, see Namespace), enforced by the NATS server: past one, that
// tenant's publish is refused and no other tenant notices. The rest are
// enforced by every worker, per host. Zero fields take the defaults
// (WithDefaults). The admin's setup records each tenant's quota in
// BucketTenants, where workers read it.
type TenantQuota struct {
	// TaskBytes bounds the tenant's task stream (tasks are kept,
	// replayable, for the stream's max age). Defaults to 256 MiB.
	TaskBytes int64 `json:"task_bytes,omitempty"`
	// TaskMsgs bounds the number of tasks in it. Defaults to 100,000.
	TaskMsgs int64 `json:"task_msgs,omitempty"`
	// ResultBytes bounds its results. Defaults to 512 MiB.
	ResultBytes int64 `json:"result_bytes,omitempty"`
	// ManifestBytes bounds its batch manifests. Defaults to 32 MiB.
	ManifestBytes int64 `json:"manifest_bytes,omitempty"`
	// CancelBytes bounds its cancels. Defaults to 8 MiB.
	CancelBytes int64 `json:"cancel_bytes,omitempty"`
	// OutputBytes bounds its large outputs (the object store). Defaults to
	// 512 MiB.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// InputBytes bounds its large task inputs (the inputs object store).
	// Defaults to 512 MiB.
	InputBytes int64 `json:"input_bytes,omitempty"`
	// VerdictBytes bounds its verdict cache. Defaults to 64 MiB.
	VerdictBytes int64 `json:"verdict_bytes,omitempty"`
	// DeadBytes bounds its dead letters (the oldest go first). Defaults
	// to 64 MiB.
	DeadBytes int64 `json:"dead_bytes,omitempty"`
	// Consumers bounds the consumers on its results at once (collectors,
	// watchers). Defaults to 64.
	Consumers int `json:"consumers,omitempty"`
	// Running bounds the tenant's tasks running at once on one host; 0
	// leaves them to the fair share alone. Defaults to 0.
	Running int `json:"running,omitempty"`
	// Sessions bounds its open sandbox sessions on one host (never more
	// than half the host's slots, at least one); a create past it is
	// refused (CodeQuotaExceeded). Defaults to 4.
	Sessions int `json:"sessions,omitempty"`
	// SessionTTLMS caps the TTL of its sessions, in milliseconds: a longer
	// one asked for is refused (CodeQuotaExceeded), the host's default is
	// capped to it. Defaults to 1 hour.
	SessionTTLMS int64 `json:"session_ttl_ms,omitempty"`
	// Weight is its share of a host's slots against other tenants with
	// queued tasks. Defaults to 1.
	Weight int `json:"weight,omitempty"`
}

// DefaultTenantQuota is the quota of a tenant the admin set no limits for.
var DefaultTenantQuota = TenantQuota{
	TaskBytes:     256 << 20,
	TaskMsgs:      100_000,
	ResultBytes:   512 << 20,
	ManifestBytes: 32 << 20,
	CancelBytes:   8 << 20,
	OutputBytes:   512 << 20,
	InputBytes:    512 << 20,
	VerdictBytes:  64 << 20,
	DeadBytes:     64 << 20,
	Consumers:     64,
	Sessions:      4,
	SessionTTLMS:  int64(time.Hour / time.Millisecond),
	Weight:        1,
}

// WithDefaults fills zero fields from DefaultTenantQuota.
func (q TenantQuota) WithDefaults() TenantQuota {
	d := DefaultTenantQuota
	q.TaskBytes = cmp.Or(q.TaskBytes, d.TaskBytes)
	q.TaskMsgs = cmp.Or(q.TaskMsgs, d.TaskMsgs)
	q.ResultBytes = cmp.Or(q.ResultBytes, d.ResultBytes)
	q.ManifestBytes = cmp.Or(q.ManifestBytes, d.ManifestBytes)
	q.CancelBytes = cmp.Or(q.CancelBytes, d.CancelBytes)
	q.OutputBytes = cmp.Or(q.OutputBytes, d.OutputBytes)
	q.InputBytes = cmp.Or(q.InputBytes, d.InputBytes)
	q.VerdictBytes = cmp.Or(q.VerdictBytes, d.VerdictBytes)
	q.DeadBytes = cmp.Or(q.DeadBytes, d.DeadBytes)
	q.Consumers = cmp.Or(q.Consumers, d.Consumers)
	q.Sessions = cmp.Or(q.Sessions, d.Sessions)
	q.SessionTTLMS = cmp.Or(q.SessionTTLMS, d.SessionTTLMS)
	q.Weight = cmp.Or(q.Weight, d.Weight)
	return q
}

// SessionTTL is the quota's session TTL cap.
func (q TenantQuota) SessionTTL() time.Duration {
	return time.Duration(q.SessionTTLMS) * time.Millisecond
}

// quotaKey is one settable field: its name in the quota spec and the JSON,
// its kind (a size, a count, a duration) and where it lives.
type quotaKey struct {
	name string
	kind byte // 's' size, 'n' count, 'd' duration (stored in ms)
	i64  func(q *TenantQuota) *int64
	i    func(q *TenantQuota) *int
}

var quotaKeys = []quotaKey{
	{name: "task_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.TaskBytes }},
	{name: "task_msgs", kind: 'n', i64: func(q *TenantQuota) *int64 { return &q.TaskMsgs }},
	{name: "result_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.ResultBytes }},
	{name: "manifest_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.ManifestBytes }},
	{name: "cancel_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.CancelBytes }},
	{name: "output_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.OutputBytes }},
	{name: "input_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.InputBytes }},
	{name: "verdict_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.VerdictBytes }},
	{name: "dead_bytes", kind: 's', i64: func(q *TenantQuota) *int64 { return &q.DeadBytes }},
	{name: "consumers", kind: 'n', i: func(q *TenantQuota) *int { return &q.Consumers }},
	{name: "running", kind: 'n', i: func(q *TenantQuota) *int { return &q.Running }},
	{name: "sessions", kind: 'n', i: func(q *TenantQuota) *int { return &q.Sessions }},
	{name: "session_ttl", kind: 'd', i64: func(q *TenantQuota) *int64 { return &q.SessionTTLMS }},
	{name: "weight", kind: 'n', i: func(q *TenantQuota) *int { return &q.Weight }},
}

// QuotaKeys lists the names ParseQuota accepts.
func QuotaKeys() []string {
	out := make([]string, len(quotaKeys))
	for i, k := range quotaKeys {
		out[i] = k.name
	}
	return out
}

// ParseQuota sets the fields spec names on base: "key=value,key=value",
// sizes like 512M or 2G, counts, durations like 2h (session_ttl). An
// unknown key or a bad value is an error naming it.
func ParseQuota(spec string, base TenantQuota) (TenantQuota, error) {
	q := base
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return base, fmt.Errorf("quota: %q is not key=value (keys: %s)", part, strings.Join(QuotaKeys(), ", "))
		}
		k, found := findQuotaKey(strings.TrimSpace(name))
		if !found {
			return base, fmt.Errorf("quota: unknown key %q (keys: %s)", name, strings.Join(QuotaKeys(), ", "))
		}
		n, err := k.parse(strings.TrimSpace(val))
		if err != nil {
			return base, fmt.Errorf("quota: %s: %w", k.name, err)
		}
		k.set(&q, n)
	}
	return q, q.Validate()
}

func findQuotaKey(name string) (quotaKey, bool) {
	for _, k := range quotaKeys {
		if k.name == name {
			return k, true
		}
	}
	return quotaKey{}, false
}

func (k quotaKey) get(q *TenantQuota) int64 {
	if k.i64 != nil {
		return *k.i64(q)
	}
	return int64(*k.i(q))
}

func (k quotaKey) set(q *TenantQuota, n int64) {
	if k.i64 != nil {
		*k.i64(q) = n
	} else {
		*k.i(q) = int(n)
	}
}

func (k quotaKey) parse(v string) (int64, error) {
	switch k.kind {
	case 's':
		return ParseSize(v)
	case 'd':
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%q is not a positive duration like 30m or 2h", v)
		}
		return int64(d / time.Millisecond), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<31 {
		return 0, fmt.Errorf("%q is not a count", v)
	}
	return n, nil
}

// Validate refuses negative limits, naming the field.
func (q TenantQuota) Validate() error {
	for _, k := range quotaKeys {
		if n := k.get(&q); n < 0 {
			return fieldErr(CodeInvalidField, "quota."+k.name, "must not be negative (0 takes the default)")
		}
	}
	return nil
}

// String lists every field with its value, as ParseQuota reads them.
func (q TenantQuota) String() string {
	var parts []string
	for _, k := range quotaKeys {
		n := k.get(&q)
		switch k.kind {
		case 's':
			parts = append(parts, k.name+"="+FormatSize(n))
		case 'd':
			parts = append(parts, k.name+"="+(time.Duration(n)*time.Millisecond).String())
		default:
			parts = append(parts, k.name+"="+strconv.FormatInt(n, 10))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// ParseSize reads a byte size: a number with an optional binary suffix
// K, M, G or T (KiB, MB... read alike; 1K = 1024).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*float64(mult) > float64(1<<62) {
		return 0, fmt.Errorf("%q is not a size like 512M or 2G", s)
	}
	return int64(v * float64(mult)), nil
}

// FormatSize writes n bytes the way ParseSize reads it, exactly.
func FormatSize(n int64) string {
	for i, unit := range []string{"T", "G", "M", "K"} {
		if m := int64(1) << (10 * (4 - i)); n >= m && n%m == 0 {
			return strconv.FormatInt(n/m, 10) + unit
		}
	}
	return strconv.FormatInt(n, 10)
}
