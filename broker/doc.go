// Package broker owns Warren's NATS client side: a connection helper for a
// NATS server (an embedded one from package broker/embedded, or a real
// cluster past one machine), the idempotent setup of the streams, consumers
// and buckets the other packages rely on, and the auth directory and the
// nats-server configuration it generates. It does not link nats-server
// itself (`go list -deps ./broker` names no nats-server/v2/server): client
// programs that import it stay small and start fast; the server lives in
// broker/embedded.
//
// # Model
//
//	WARREN_TASKS    warren.tasks.<pool>.<profile>.<batch> only (TaskSubjects);
//	                Limits retention, so every task can be replayed until
//	                MaxAge; Nats-Msg-Id dedup so a re-published task is not
//	                queued twice within the duplicate window; DiscardNew: a
//	                full stream refuses new tasks, it never drops unrun ones.
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
// (messages.ConsumerName), created or updated by the workers themselves
// (their flags own AckWait and MaxDeliver); its replicas follow the
// stream's.
//
// Setup is owned: [Apply] (`warren setup`) creates and updates streams and
// buckets, printing a [Change] per field. [Setup], which every process
// calls at start, only creates what is missing (replicas from
// StreamConfig.Replicas, WARREN_REPLICAS, else min(3, [ClusterSize])) and
// checks the guarantee fields of the rest (fields.go), returning an
// *[IncompatibleError] that names stream, field, have and want. Tunables
// (replicas, max age, max bytes, placement, anything not compared) belong
// to the operator. resources.go is the table of streams and buckets.
//
// # Authentication
//
// An auth directory (InitAuthDir, `warren auth init`) holds nkey users and
// generates a nats-server configuration: the fleet account WARREN (streams,
// admin, workers with per-pool permissions) and one account per submitter
// tenant that imports only its own subjects, matched on the tenant token of
// a "<tenant>.<name>" batch id (account_token_position). embedded.Config's
// ConfigFile makes the embedded server enforce it and reload it on change. Clients use
// ClientAuth (creds file, CA); tenants use the TenantAPIPrefix.
//
// # Failure handling
//
// CheckJetStream turns the "no responders" of a server without JetStream
// into an error saying to start nats-server with -js.
//
// Setup errors are returned wrapped with the resource name;
// Setup creates what is missing and only reads what exists, so roles that
// may only read stream info can call it. A publish refused by a full
// stream is [IsStoreFull] (never [IsResultExists], which shares its error
// code); [ExplainPublish] turns it into a *[StoreFullError] naming the
// stream and `warren setup --max-bytes`. On a cluster a delivery lost with
// a node (sent by a dying consumer leader) comes back after the consumer's
// AckWait, 10s by default: that bounds the longest stall of a batch through
// a node failure.
//
// # Limits
//
// Byte limits per stream and bucket: [DefaultMaxBytes]. WARREN_TASKS's
// MaxMsgSize is [MaxTaskMsgBytes] (messages.MaxTaskBytes plus headers), a
// tunable: the scheduler refuses a task over it or over the server's
// max_payload at submit, naming which. Replicas at most 5.
//
// See docs/security.md, "The bus": workers are trusted by the tenants they
// serve, pulls are not confined per pool, tenants see stream metadata and
// cannot read WARREN_TASKS.
package broker
