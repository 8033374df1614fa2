// Package broker owns Warren's NATS side: an embedded nats-server with
// JetStream for one machine and every test, a connection helper for an
// external NATS (a real cluster past one machine), and the idempotent setup
// of the streams, consumers and buckets the other packages rely on.
//
// # Model
//
//	WARREN_TASKS    Limits retention, so every task can be replayed until
//	                MaxAge; Nats-Msg-Id dedup so a re-published task is not
//	                queued twice within the duplicate window.
//	WARREN_RESULTS  one message per subject warren.results.<batch>.<attempt>.<id>
//	                (MaxMsgsPerSubject 1 + DiscardNewPerSubject): the broker
//	                itself refuses a second result for the same task attempt.
//	WARREN_DLQ      dead letters with their original payload and a reason,
//	                one per warren.dlq.<reason>.<batch>.<attempt>.<id> (workers
//	                publish expecting the subject empty).
//	warren_hosts    KV: the host registry, entries expire unless refreshed.
//	warren_cancel   KV: cancelled batches and tasks.
//	warren_batches  KV: batch manifests (task count per attempt).
//	warren_claims   KV: which worker runs a task attempt; per-key TTL.
//	warren_outputs  object store: result outputs too large for a message.
//
// Workers of a pool share one durable pull consumer per profile
// (messages.ConsumerName). Setup functions use create-or-update, so every
// process may call them at start without coordination.
//
// # Failure handling
//
// [Server.Start] returns an error if the server is not ready for
// connections within Config.ReadyTimeout; the JetStream file store in
// Config.DataDir survives restarts, so a broker stopped mid-batch resumes
// where it was. Setup errors are returned wrapped with the resource name.
package broker
