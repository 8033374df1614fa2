package messages

import "time"

// HostInfo is a worker host's entry in the registry bucket BucketHosts,
// stored under "<pool>.<ID>". The worker re-puts it on every heartbeat; the bucket's
// TTL removes the entry of a host that stopped refreshing it.
type HostInfo struct {
	ID        string      `json:"id"`
	Pool      string      `json:"pool"`
	Capacity  int         `json:"capacity"` // sandbox slots
	Free      int         `json:"free"`     // slots not running a task right now
	Isolation []Isolation `json:"isolation"`
	Profiles  []string    `json:"profiles"`
	Version   string      `json:"version"`
	// SealKey is the public curve key this host opens its pool's secrets
	// with; empty when it holds none. A client that seals to it trusts
	// whoever can write the registry (see docs/security.md).
	SealKey string `json:"seal_key,omitempty"`
	// Ceilings are the largest limits a task may ask for on this host
	// (worker --max-memory, --max-timeout, --disk, ...): a task above one
	// is refused at submit and answered invalid (CodeOverCeiling) by the
	// worker. Zero fields bound nothing.
	Ceilings Limits `json:"ceilings,omitzero"`
	// Draining is set once the worker stopped taking tasks (first SIGTERM):
	// its running tasks finish, then the entry is removed.
	Draining  bool      `json:"draining,omitempty"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
}
