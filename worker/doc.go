// Package worker is the host side of Warren: one Worker per host pulls
// tasks for its free sandbox slots, runs each in a sandbox, streams live
// events to the task's reply subject, stores exactly one result per task
// attempt and then acks.
//
// # Slots
//
//	        take slot           Fetch(1) got a task
//	free ───────────► pulling ───────────────────► running ──► result stored, ack ──► free
//	  ▲                  │ no task within PullWait                │
//	  └──────────────────┘                                        │ infrastructure failure
//	                                                              ▼
//	                                             Nak with delay / dead letter + Term
//
// A slot is taken before a pull is issued, so the worker never holds a task
// it has no slot for: nothing waits in a client buffer while its AckWait
// runs out (the pre-buffer trap, nats.go#1929). Capacity is decided here,
// on the host; the consumer's MaxAckPending is only a fleet-wide safety net.
//
// Each served profile (a durable consumer) has its own pull loop, and the
// loops share the slots. With one profile a pull waits up to PullWait while
// it holds its slot. With several, a pull holding a slot never waits
// (FetchNoWait): otherwise a freed slot would mostly land in an idle
// profile's long pull and sit there (measured on a 4-profile Coq worker:
// 0.69 of the direct check's throughput before, 0.92-1.01 after). A profile that found nothing pauses without
// a slot, 20 ms doubling up to PullWait, so an idle profile's first task
// starts within PullWait and a busy profile never waits for a slot that
// is free.
//
// # Failure handling
//
//   - Invalid task (undecodable, fails validation, a reply outside its own
//     batch's events and the configured inbox prefixes): an invalid result
//     naming the field and a stable code, a copy in the dead-letter stream,
//     Term. It is never redelivered and the worker keeps serving. A task that
//     arrived with cleartext secrets is dead-lettered with their values
//     replaced and erased from TASKS when the credentials allow.
//   - Secrets this worker cannot open (no seal key, another pool's key): an
//     infra_error result with code secrets_unavailable, a dead letter under
//     reason "secrets", Term: a key problem is not retried.
//   - Infrastructure failure (sandbox unavailable, setup error, panic): Nak
//     with a delay doubling per delivery; on the last allowed delivery an
//     infra_error result, a dead letter and Term.
//   - Worker crash: the delivery's AckWait (kept short by InProgress
//     heartbeats while a task runs) expires and the task is redelivered. A
//     task that exhausts MaxDeliver this way is caught from the server's
//     max-deliveries advisory by any worker and dead-lettered with an
//     infra_error result, so a batch always completes.
//   - Lost ack: a redelivered task whose result is already stored is acked
//     without running again; the RESULTS stream refuses a second result for
//     the same attempt in any case.
//   - Broker outage: results are retried for up to two minutes while the
//     task's message stays unacked.
//
// # Reply confinement and secrets
//
// Events are published only where messages.CheckReply allows (the task's
// batch's events or Config.InboxPrefixes); the emitter falls back to the
// default event subject for anything else and never publishes to a
// reserved subject, whatever it is given. Sealed secrets are opened here
// only, with Config.SealKey, added to the process environment, and masked
// ("***") in captured output and in events: the capture holds back a tail
// that may be the start of a secret until the next write decides, so a
// secret split across two writes is masked too. Its public key is
// published in the host registry.
//
// # Shutdown
//
// Stop(ctx) drains: pulling stops, running tasks finish. If ctx ends first,
// running tasks are cancelled and their messages Nak'ed for another worker.
// `warren worker` maps the first SIGTERM to a drain and the second to
// cancel.
//
// # Cancellation
//
// The worker mirrors the cancel bucket. A cancelled task that is running is
// killed (its result says cancelled); one still queued gets a cancelled
// result when it is pulled, without running.
package worker
