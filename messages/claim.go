package messages

import (
	"fmt"
	"time"
)

// BucketClaims is the KV bucket where a worker claims a task attempt before
// running it, so that an attempt runs at most once at a time whatever
// message ids its publishers used.
const BucketClaims = "warren_claims"

// Claim is the value stored in BucketClaims under ClaimKey(batch, attempt,
// id) while a worker runs the attempt. It is created only if absent, kept
// alive by the task's heartbeat and carries a per-key TTL, so the claim of a
// worker that died expires and another worker takes the attempt over.
type Claim struct {
	Host      string    `json:"host"`       // the worker running the attempt
	StreamSeq uint64    `json:"stream_seq"` // its message's sequence in WARREN_TASKS
	Delivery  int       `json:"delivery"`   // that message's delivery count
	Time      time.Time `json:"time"`       // when it was claimed or last refreshed
}

// ClaimKey is the claims-bucket key of a task attempt.
func ClaimKey(batch string, attempt int, id string) string {
	return fmt.Sprintf("%s.%d.%s", batch, attempt, id)
}
