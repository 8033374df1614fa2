package messages

import "fmt"

// Stream, bucket and subject names. Everything Warren puts on NATS lives
// under the "warren." subject prefix and the WARREN_/warren_ names, so it
// can share a cluster with other applications.
const (
	StreamTasks   = "WARREN_TASKS"
	StreamResults = "WARREN_RESULTS"
	StreamDLQ     = "WARREN_DLQ"
	BucketHosts   = "warren_hosts"
	BucketCancel  = "warren_cancel"
	BucketBatches = "warren_batches"
	// BucketVerdicts caches decided verdicts by content hash (verify.CacheKey).
	BucketVerdicts = "warren_verdicts"
	// BucketTenants holds each tenant's quota, keyed by tenant (written by
	// the admin's setup, read by workers).
	BucketTenants = "warren_tenants"

	// Tasks: warren.tasks.<pool>.<profile>.<batch>; a batch id may be
	// "<tenant>.<name>" (two tokens), see ValidBatchID.
	SubjectTasksPrefix = "warren.tasks"
	// Results: warren.results.<batch>.<attempt>.<id>
	SubjectResultsPrefix = "warren.results"
	// Dead letters: warren.dlq.<reason>.<batch>.<attempt>.<id>
	SubjectDLQPrefix = "warren.dlq"
	// Default live events: warren.events.<batch>.<id>
	SubjectEventsPrefix = "warren.events"

	DefaultPool    = "default"
	DefaultProfile = "default"
)

// Headers set on published tasks. Nats-Msg-Id makes publishing idempotent
// within the TASKS stream's duplicate window; the others let a worker name
// the task in an error result even when the body cannot be decoded.
const (
	HeaderMsgID   = "Nats-Msg-Id"
	HeaderTaskID  = "Warren-Task-Id"
	HeaderBatch   = "Warren-Batch"
	HeaderAttempt = "Warren-Attempt"
	// HeaderDLQReason names why a payload was dead-lettered; HeaderDLQError
	// carries the error text and HeaderDLQStreamSeq the TASKS sequence.
	HeaderDLQReason    = "Warren-Dlq-Reason"
	HeaderDLQError     = "Warren-Dlq-Error"
	HeaderDLQStreamSeq = "Warren-Dlq-Stream-Seq"
)

// TaskSubject is where a task is published.
func TaskSubject(pool, profile, batch string) string {
	return fmt.Sprintf("%s.%s.%s.%s", SubjectTasksPrefix, pool, profile, batch)
}

// TaskFilter is the subject filter of the consumer a pool's workers share
// for one profile; ">" matches a batch id of one token and a tenant's
// "<tenant>.<name>".
func TaskFilter(pool, profile string) string {
	return fmt.Sprintf("%s.%s.%s.>", SubjectTasksPrefix, pool, profile)
}

// BatchTaskFilter matches every task of a batch, in any pool and profile.
func BatchTaskFilter(batch string) string {
	return fmt.Sprintf("%s.*.*.%s", SubjectTasksPrefix, batch)
}

// ResultSubject is where the single result of a task attempt is stored.
func ResultSubject(batch string, attempt int, id string) string {
	return fmt.Sprintf("%s.%s.%d.%s", SubjectResultsPrefix, batch, attempt, id)
}

// BatchResultFilter matches every result of a batch attempt; attempt 0
// matches all attempts.
func BatchResultFilter(batch string, attempt int) string {
	if attempt <= 0 {
		return fmt.Sprintf("%s.%s.*.*", SubjectResultsPrefix, batch)
	}
	return fmt.Sprintf("%s.%s.%d.*", SubjectResultsPrefix, batch, attempt)
}

// EventSubject is the default reply subject of a task's live events.
func EventSubject(batch, id string) string {
	return fmt.Sprintf("%s.%s.%s", SubjectEventsPrefix, batch, id)
}

// DLQSubject is where the dead letter of a task attempt is kept. Workers
// publish it expecting the subject to be empty
// (Nats-Expected-Last-Subject-Sequence: 0), so an attempt is dead-lettered
// once per reason however often or late it is redelivered.
func DLQSubject(reason, batch string, attempt int, id string) string {
	return fmt.Sprintf("%s.%s.%s.%d.%s", SubjectDLQPrefix, reason, batch, attempt, id)
}

// DLQReasonFilter matches every dead letter of a reason ("invalid",
// "infra", "max_deliveries") and batch; batch "*" matches all batches.
func DLQReasonFilter(reason, batch string) string {
	return fmt.Sprintf("%s.%s.%s.*.*", SubjectDLQPrefix, reason, batch)
}

// MsgID is the deduplication id of a task attempt.
func MsgID(batch, id string, attempt int) string {
	return fmt.Sprintf("%s.%s.%d", batch, id, attempt)
}

// ConsumerName is the durable consumer a pool's workers share for a profile.
func ConsumerName(pool, profile string) string {
	return "warren_" + pool + "_" + profile
}

// CancelKey is the cancel-bucket key for a task of a batch attempt, or for
// the whole attempt when id is empty. Keys are per attempt so that a replay
// of a cancelled batch runs.
func CancelKey(batch string, attempt int, id string) string {
	if id == "" {
		return fmt.Sprintf("%s.%d", batch, attempt)
	}
	return fmt.Sprintf("%s.%d.%s", batch, attempt, id)
}
