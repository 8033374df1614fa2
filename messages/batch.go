package messages

import (
	"strconv"
	"time"
)

// BatchManifest is the value stored in bucket BucketBatches under the batch
// id: how many tasks each attempt of the batch has, so a client knows how
// many results to wait for. The scheduler writes an attempt's entry before
// it publishes the tasks, and marks it Complete once the stream has
// acknowledged every one of them.
type BatchManifest struct {
	V     int    `json:"v"`
	Batch string `json:"batch"`
	// Attempts is keyed by the attempt number in decimal ("1", "2", ...).
	Attempts map[string]AttemptManifest `json:"attempts"`
}

// AttemptManifest describes one attempt of a batch.
type AttemptManifest struct {
	Total       int       `json:"total"` // tasks in this attempt, one result each
	PublishedAt time.Time `json:"published_at"`
	// Complete is set once every task of the attempt is stored in TASKS. An
	// attempt left incomplete (a crashed publisher) is finished by
	// publishing it again; Nats-Msg-Id deduplication keeps it exactly-once.
	Complete bool `json:"complete"`
	// Digest identifies the task set (sha256 of the tasks as published, in
	// order, with the attempt field cleared), so a re-submission of the same
	// batch id with different tasks is refused.
	Digest string `json:"digest,omitempty"`
	// ReplayOf is the attempt whose tasks a replay republished (0 for the
	// original submission).
	ReplayOf int `json:"replay_of,omitempty"`
	// IDs are the attempt's task ids in publication order: a collector
	// accepts a result only for one of them. Absent in manifests written
	// before it existed.
	IDs []string `json:"ids,omitempty"`
	// IDChunks, when not 0, says the ids are too many for the manifest:
	// they are in that many entries of its bucket, keys IDChunkKey(batch,
	// Digest, 0..IDChunks-1), each an IDChunk, written before the manifest
	// that points to them; IDs is then empty.
	IDChunks int `json:"id_chunks,omitempty"`
}

// Attempt returns the manifest of attempt n.
func (m *BatchManifest) Attempt(n int) (AttemptManifest, bool) {
	a, ok := m.Attempts[strconv.Itoa(n)]
	return a, ok
}

// SetAttempt records the manifest of attempt n.
func (m *BatchManifest) SetAttempt(n int, a AttemptManifest) {
	if m.Attempts == nil {
		m.Attempts = map[string]AttemptManifest{}
	}
	m.Attempts[strconv.Itoa(n)] = a
}

// LatestAttempt is the highest attempt recorded, 0 when there is none.
func (m *BatchManifest) LatestAttempt() int {
	latest := 0
	for k := range m.Attempts {
		if n, err := strconv.Atoi(k); err == nil && n > latest {
			latest = n
		}
	}
	return latest
}

// CancelRequest is the value stored in bucket BucketCancel under
// CancelKey(batch, attempt, id): its presence cancels the task, or the
// whole batch attempt when the key has no task part.
type CancelRequest struct {
	Reason string    `json:"reason,omitempty"`
	Time   time.Time `json:"time"`
}
