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
//   - Invalid task (undecodable, fails validation): an invalid result naming
//     the field and a stable code, a copy in the dead-letter stream, Term. It
//     is never redelivered and the worker keeps serving.
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
// # Shutdown
//
// Stop(ctx) drains: pulling stops, running tasks finish. If ctx ends first,
// running tasks are cancelled and their messages Nak'ed for another worker.
// `warren worker` maps the first SIGTERM to a drain and the second to
// cancel.
//
// # Host registry and observability
//
// The host's entry in the registry bucket (messages.HostInfo) is refreshed
// every RegistryInterval and within about 250 ms of a slot being taken or
// freed, so `warren hosts` and placement see free slots nearly live. Stop
// marks the entry draining before it waits for running tasks, and removes it
// at the end.
//
// With Config.Metrics set the worker registers Prometheus collectors
// (warren_worker_*): slots and busy slots, tasks started and finished by
// profile and status, task duration and queue wait (publication to start)
// histograms, sandbox setup failures by step, verdicts by reason,
// redeliveries, dead letters by reason and pull errors. Labels are bounded
// sets, never task or batch ids. Ready reports whether the worker serves
// (started, not draining, connected); `warren worker --metrics-listen ADDR`
// serves /metrics, /healthz and /readyz.
//
// # Cancellation
//
// The worker mirrors the cancel bucket. A cancelled task that is running is
// killed (its result says cancelled); one still queued gets a cancelled
// result when it is pulled, without running.
package worker
