// Package scheduler is Warren's client side: it publishes batches of tasks
// onto WARREN_TASKS, reads their results from WARREN_RESULTS, cancels,
// replays, lists the host registry and runs single commands with live
// output. The `warren submit|results|cancel|replay|hosts|exec` commands are
// thin wrappers around it.
//
// # Model
//
// A batch is a set of tasks with unique ids sharing a batch id. Each
// publication of it is an attempt: Publish makes attempt 1, every Replay
// makes the next one. The manifest (bucket warren_batches, key = batch id,
// see messages.BatchManifest) records how many tasks each attempt has; it is
// written before the tasks are published, so a reader always knows how many
// results to wait for, and marked complete once the stream acknowledged all
// of them. Results are stored one per (batch, attempt, id) on
// warren.results.<batch>.<attempt>.<id>, enforced by the broker, so
// attempts never mix.
//
// # Exactly once
//
// Every task is published with Nats-Msg-Id = <batch>.<id>.<attempt>; the
// stream drops a re-publication inside its duplicate window, so a publish
// retried after an ack timeout is stored once. Past the window, the
// manifest takes over: a complete batch is not published again, and an
// incomplete one (the publisher crashed) is resumed by publishing only the
// ids not yet in TASKS. A batch without an explicit id is named after the
// digest of its tasks, so re-running the same submission is idempotent.
//
// # Validation
//
// Every task of a batch is validated client-side (messages.Task.Validate,
// and messages.CheckReply: a reply outside the task's own batch's events and
// the inbox prefixes is refused) and, once connected, its whole message
// (headers included) is checked against the server's max_payload (and
// WARREN_TASKS's max_msg_size), all before anything is written: one bad task
// refuses the whole batch with a *BatchError holding every problem in line
// order. Nothing is published and no manifest is written.
//
// # Secrets
//
// Publish seals each task's secrets to its pool's key (Config.PoolKeys:
// given keys, StaticPoolKeys; the key the pool's workers publish, pinned
// on first use in a PinStore and refused when a host publishes another,
// PinnedPoolKeys; or taken as it is, RegistryPoolKeys) with one ephemeral
// sender key per batch, before anything is written; a task with secrets
// and no key refuses the batch. Secret values
// are not part of the batch digest (a digest of a secret can be tested
// against guesses), so re-submitting with rotated values is the same batch.
//
// # Failure handling
//
// While the broker is unavailable (a restart, a leader change, a connection
// reconnecting) publications, manifest updates and reads are retried, a
// task always with its own Nats-Msg-Id, until Config.RetryFor has passed;
// then they fail with ErrBrokerUnavailable, and publishing the batch again
// resumes it. Cancel writes a key only for a batch, attempt and task that
// exist (manifest, tasks or results), else ErrUnknownBatch/ErrUnknownTask.
// Collect reads results through an ordered consumer from the start of the
// attempt, deduplicated by task id, so a collector killed at any point and
// started again yields every result. Only a result for an id in the
// attempt's manifest counts; any other stored under the batch is reported
// in CollectReport.Foreign. Exec subscribes to the live events
// before publishing, checks their sequence numbers (a gap is reported, a new
// delivery restarts the output with a notice) and takes the result from the
// stream, which is authoritative; if ctx ends first it cancels the task.
// When the attempt's final event comes (sent once the result is stored) it
// takes the result that event carries (messages.Event.Result: the stored
// bytes, when that delivery stored them and they fit FinalResultMax, and
// only if they name this attempt and delivery), else reads it with one
// direct get by subject; a task still running
// after Config.ResultWatch, a final event that was lost, or a read that
// found nothing (a replica behind) make it watch for the result (an ordered
// consumer), so a short task costs the broker no consumer and a lost event
// no result. It returns once it holds the result and the delivery's events
// up to the result's Events (every output event precedes the store); a
// result without Events (an older worker) waits for the exit or
// EventGrace.
//
// # Round trips
//
// A one-off `warren exec` is mostly round trips to the broker, so each is
// counted. Streams and buckets a Client looked up are reused for
// handleTTL (a publication's size check, manifest create and update share
// one lookup; a long-lived client sees a changed configuration within
// it). The manifest is marked complete from the revision its create
// returned, read again only if another writer changed it. Exec subscribes
// without a flush (the server reads a connection in order, and the SUB
// precedes the task's publication), and meanwhile checks the host registry
// (Hosts: one batch direct get of every entry, not a consumer and a get
// per host) and looks up what the publication needs. Against a running
// `warren up`, what comes before the task's publication (JetStream check,
// flush, registry lookup, size check, manifest lookup) is one concurrent
// round, not a round trip each in sequence, then manifest create and
// publish; the setup is skipped by cmd/warren's setup stamp, and the
// manifest's completion runs while the task does.
//
// # Limits
//
// One task is at most messages.MaxTaskBytes encoded, and its message with
// headers at most the server's max_payload. A batch without a manifest
// (published with the raw protocol) can be read, but its total is unknown.
// A batch is held in memory while it is validated and published. The
// manifest lists every task id of each attempt, so it must fit in the
// broker's max payload. Live events are best effort (core NATS); the stored
// result is the record. A cancel key lives for the
// cancel bucket's TTL and applies to every attempt of its batch, replays
// included.
//
// # Sandbox sessions
//
// CreateSandbox places a session on a host of the pool with a free slot
// (registry order, most free first; each host refuses no_capacity
// atomically, the next is tried; none: messages.ErrNoCapacity at once, or
// retried for CreateOptions.Wait). A *Sandbox is the id, host, pool and
// token; its methods are one request each (CopyTo/CopyFrom/List page in
// chunks). Exec streams output events to the writers in sequence order,
// waits after the exit for the count the reply names, and reports a gap as
// ErrOutputLost; a running exec asks its host every 2 s whether it still
// answers. A host with no responder, or gone from the registry when a
// request times out, is messages.ErrSandboxGone. Nothing here imports the
// worker: the wire is package messages.
package scheduler
