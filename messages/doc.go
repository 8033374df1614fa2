// Package messages is Warren's wire protocol: the JSON documents that cross
// NATS between the scheduler, the workers and any other client, and the
// subjects and headers they travel on.
//
// # Model
//
// A [Task] is published once onto the TASKS stream. A worker that takes it
// streams [Event] values, in order and numbered without gaps, to the task's
// reply subject while it runs, and finally stores exactly one [Result] per
// task attempt in the RESULTS stream; the attempt's last event is a final
// exit. A [Claim] in BucketClaims keeps an attempt to one run at a time. Every document carries a version field
// "v"; this package reads and writes [Version] and refuses any other.
//
// # Validation
//
// [DecodeTask] is the only way a worker turns bytes into a task: it checks
// size, UTF-8, strict JSON (unknown fields are refused, so a typo is an error
// and not a silently ignored option) and then [Task.Validate]. Every refusal
// is an [*Error] with a stable [Code] that survives the trip through JSON, so
// a client in any language can branch on the code and a Go client can use
// errors.Is against the sentinels in errors.go.
//
// # Reply rule
//
// A task's live events go only to its own batch's events
// (warren.events.<batch>.<...>) or under an inbox prefix the operator
// configured ([DefaultInboxPrefixes]: "_INBOX."). [CheckReply] enforces it
// on both sides, with the stable code [CodeReplyForbidden] on field
// "reply"; [ReservedSubject] names what no event may ever reach ($JS, $KV,
// $O, $SYS and every other "$" subject; Warren's tasks, results and DLQ).
//
// # Secrets
//
// A task's secrets (name -> value, given to the process as environment
// variables) exist in cleartext only in the submitter's memory and in the
// worker. [SealSecrets] seals them to the pool's public curve key (nkeys
// xkeys: X25519, XSalsa20-Poly1305) from an ephemeral sender key, bound to
// the task's batch and id; [OpenSecrets] opens them with the pool's seal key
// and refuses a box moved to another task. A task on the wire with
// cleartext secrets is refused by [DecodeTask] ([CodeCleartextSecrets]).
//
// # Sandbox sessions
//
// [SandboxRequest] / [SandboxReply] on SandboxSubject(pool, host, tenant,
// op), with [SandboxEvent] output on an exec's reply (docs/sandboxes.md).
// [DecodeSandboxRequest] validates for the op with full field paths
// (exec.argv[0], create.env.HOME, file.length); the session codes
// (no_capacity, sandbox_gone, token_invalid, token_expired, draining,
// not_found, file_refused) survive a reply's JSON round trip for errors.Is.
//
// # Limits
//
// Identifiers (task id, batch, pool, profile) become NATS subject tokens, so
// they are restricted to [A-Za-z0-9_-] and 1..128 bytes. Stdin and file
// contents are any bytes ([Bytes]: a JSON string for UTF-8 text, else
// {"base64": ...}); every other string field must be valid UTF-8, refused
// by name otherwise (JSON would replace the invalid bytes unnoticed). The
// whole encoded task must fit in
// [MaxTaskBytes]; each argument, shell script and env string in
// [MaxArgStrlen] and argv and env together in [MaxExecBytes], as execve
// counts them.
package messages
