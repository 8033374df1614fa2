// Package worker is the host side of Warren: one Worker per host pulls
// tasks for its free sandbox slots, runs each in a sandbox, streams live
// events to the task's reply subject, stores exactly one result per task
// attempt and then acks.
//
// # Slots
//
//	        take slot           Fetch(1) got a task
//	free ───────────► pulling ───────────────────► running ──► sandbox done ──► free
//	  ▲                  │ no task within PullWait                │   └─ (the task, slot-less) result stored, ack
//	  └──────────────────┘                                        │ infrastructure failure
//	                                                              ▼
//	                                             Nak with delay / dead letter + Term
//
// A slot is taken before a pull is issued, so the worker never holds a task
// it has no slot for: nothing waits in a client buffer while its AckWait
// runs out (the pre-buffer trap, nats.go#1929). Capacity is decided here,
// on the host; the consumer's MaxAckPending is only a fleet-wide safety net.
// A slot is the sandbox's: it is free once the run is done, while the task
// still stores its result and acks (a publication acknowledged by the
// stream, a Raft round on a replicated one), so the next task runs
// meanwhile. At most Capacity tasks store at once; past that a finished
// run keeps its slot until one is stored, so a broker slow to store holds
// the pulls back instead of piling up results in memory. The claim is
// held until the result is stored, so no other run of the attempt starts.
//
// Each served profile (a durable consumer) has its own pull loop, and the
// loops share the slots. With one profile a pull waits up to PullWait while
// it holds its slot. With several, a pull holding a slot never waits
// (FetchNoWait): otherwise a freed slot would mostly land in an idle
// profile's long pull and sit there, and a worker serving several
// profiles would lose much of its throughput. A profile that found nothing pauses without
// a slot, 20 ms doubling up to PullWait, so an idle profile's first task
// starts within PullWait and a busy profile never waits for a slot that
// is free. On an idle host that pause would be on a one-off `warren
// exec`'s path (up to PullWait), so once every profile's last pull found nothing, nothing can be
// starved and the pulls park again: each profile's pull waits holding a
// free slot, up to 1 s (200 ms in turns when there are more profiles than
// slots); the first task found ends the parking, and a parked slot comes
// back within that wait. A profile waiting for its turn listens for its
// next task (doorbell.go): one published there preempts a parked pull, so
// on an idle host no task waits for a turn while slots are free.
//
// # Verify tasks
//
// A verify task goes to Config.Verifier (*verify.Service in production),
// which runs every untrusted step through the worker's Runner. The
// contract is written in verify's types (verify.RunFunc, verify.Outcome):
// the worker imports verify, never the reverse. The worker only calls
// Verify and Profiles; whoever builds the verifier starts it (pre-warmed
// REPL pools) before Start and closes it after Stop (cmd/warren's host).
//
// # Claims: one run per attempt
//
// Before running, a delivery claims its task attempt: it creates the key
// <batch>.<attempt>.<id> in the warren_claims bucket (create-only, a TTL of
// Consumer.AckWait), naming this host and the message's stream sequence,
// and each heartbeat renews it. A delivery that finds the attempt claimed
// by another run (another worker's live claim, or another message of the
// attempt running here) waits, heartbeating its own message, until the
// result is stored (then it acks without running or emitting events) or
// the claim goes (then it claims it). So an attempt runs at most once at a
// time and yields one result whatever Nats-Msg-Id its publishers used. A
// claim naming this host that no run here holds is left over from an
// earlier life of the worker and is taken over at once; one whose holder
// died expires after the TTL. A run that loses its claim (no renewal for a
// whole TTL, and another run took it) is cancelled at its next heartbeat
// and its message Nak'ed, to come back and wait: a claim is a lease, so a
// run stalled for a TTL may overlap its successor by up to one heartbeat. A
// run that ends without a stored result releases (purges) its claim; once
// the result is stored the claim is left to its TTL (a later delivery finds
// the result and acks), which saves a replicated write per task.
//
// # Events
//
// Every task attempt's last event is an exit with Final set, carrying the
// stored result's status, sent after the result is stored: after a run;
// after the error event of an invalid task or of the last infrastructure
// failure; on behalf of a worker that died on the last delivery (as
// delivery N+1). It carries the result's bytes (Event.Result) when this
// write stored them and they fit messages.FinalResultMax, so a client need
// not read them; not when another run's result was there first (the
// store was refused or deduplicated). An error event followed by a retry
// is not final. started is sent when the task is handed to the sandbox: a
// task cancelled before that, or refused as invalid, sends no started.
//
// # Failure handling
//
//   - Invalid task (undecodable, fails validation, a reply outside its own
//     batch's events and the configured inbox prefixes, or its headers or
//     subject disagree with the body): an invalid result naming the field and
//     a stable code, filed under the body's id and attempt when the body
//     names them (else the headers', else seq-N); an error and a final exit
//     event on the body's reply subject when the reply rule allows it (else
//     the default event subject); a copy in the dead-letter stream, Term. It
//     is never redelivered and the worker keeps serving. A task that arrived
//     with cleartext secrets is dead-lettered with their values replaced and
//     erased from TASKS when the credentials allow.
//   - Secrets this worker cannot open (no seal key, another pool's key): an
//     infra_error result with code secrets_unavailable, a dead letter under
//     reason "secrets", Term: a key problem is not retried.
//   - A command that cannot be executed (not found, not executable): the
//     task's failure, not the host's: a failed result with exit 127 / 126
//     and error code exec_failed, stored on the first delivery.
//   - Infrastructure failure (sandbox unavailable, setup error, panic): Nak
//     with a delay doubling per delivery; on the last allowed delivery an
//     infra_error result, a dead letter and Term.
//   - Worker crash: the delivery's AckWait (kept short by InProgress
//     heartbeats while a task runs) expires and the task is redelivered. A
//     task that exhausts MaxDeliver this way is caught from the server's
//     max-deliveries advisory by any worker and dead-lettered with an
//     infra_error result, so a batch always completes; that worker first
//     waits while the attempt is claimed, so a live run's result wins.
//   - Dead letters are kept once per task attempt and reason (one message
//     per DLQ subject): a redelivered task is never dead-lettered twice.
//   - Lost ack: a redelivered task whose result is already stored is acked
//     without running again; the RESULTS stream refuses a second result for
//     the same attempt in any case.
//   - Broker outage (a restart, its disk full: broker.Unavailable):
//     results, outputs and dead letters are retried for as long as the
//     worker runs (a refusal for another reason, for two minutes), while
//     the task's delivery is kept alive (InProgress) and its claim
//     refreshed: the outage costs no delivery, so it never dead-letters a
//     task. A delivery that cannot claim its attempt while the broker is
//     away waits the same way. A Stop whose deadline passed stops
//     retrying after the current try: the unacked task is redelivered. A
//     delivery that cannot tell whether its attempt already has a result
//     is Nak'ed, not run.
//
// # Limits
//
// A result is one message: when it would not fit the broker's max payload,
// the larger output stream (then the other) is stored whole in the
// warren_outputs object store and the result names the object, so the
// stored output is everything up to output_bytes (nats.go's object put can,
// rarely, leave one idle goroutine of its own behind: brokertest.UpstreamLeaks
// says why). A delivery waiting for
// another run of its attempt holds its slot while it waits.
//
// Ceilings: Config.Ceilings are the largest limits a task may ask for
// (memory, wall and CPU time, processes, open files, output, disk),
// published in the host record; a task above one is answered invalid with
// code over_ceiling, naming the limit, and never runs. Clients refuse it
// before publishing from the same record.
//
// Disk: each task's home is bounded by its limits.disk_bytes, else
// Config.DiskBytes (1 GiB), which is also its ceiling. Homes are tmpfs,
// held in memory: New refuses a Capacity × DiskBytes above the host's
// memory and swap and warns above what is available now. A reached limit
// is the result's disk_full.
//
// Output files (Task.Outputs): read from the home through sandbox/files in
// Spec.Finished, after the task's tree ended and before teardown (no
// symlink followed; FIFOs, devices, hard links refused), held in memory
// within messages.MaxOutputFiles / MaxOutputFileBytes /
// MaxOutputTotalBytes, then stored in warren_outputs and listed in the
// result (output_files.go). A failed store is an infrastructure error: the
// delivery is retried.
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
// redeliveries, dead letters by reason and pull errors, and, with a Runner
// that has a warm pool (*sandbox.Runner), its ready and starting warm
// sandboxes. Labels are bounded
// sets, never task or batch ids. Ready reports whether the worker serves
// (started, not draining, connected); `warren worker --metrics-listen ADDR`
// serves /metrics, /healthz and /readyz.
//
// # Cancellation
//
// The worker mirrors the cancel bucket. A cancelled task that is running is
// killed (its result says cancelled); one still queued gets a cancelled
// result when it is pulled, without running.
//
// # Sandbox sessions
//
// [Sessions] (NewSessions, Start, Stop) serves a host's long-lived
// sandboxes on messages.SandboxHostFilter (docs/sandboxes.md): each
// session holds one of the worker's slots from create to its end, taken
// from the same token channel the pull loops use (session_slots.go), so a
// host whose slots all hold sessions pulls no task and its registry entry
// shows them as busy. A pull waiting for a task holds a slot; a create that
// finds none free is a pending reservation: it preempts the waiting pulls,
// no pull loop keeps or takes a token until it ends (one that registers
// its fetch later ends that fetch at once), and it takes the slot one
// hands back within slotReclaimWait, else it refuses no_capacity. Every request
// but create and sessions carries the session's token, a stateless HMAC
// over (id, tenant, expiry) with the host's key (session_token.go); the
// tenant is the subject's, never a field of the body. A tenant's quota
// (its registry entry, watched as for its tasks; the defaults without
// one) bounds its sessions on the host (session_quota.go): at most
// Sessions open or being created, never above half the slots (at least
// one), past which a create gets quota_exceeded naming the limit and its
// fix; a TTL above SessionTTLMS is refused the same way and the default
// TTL is capped to it, so the reported expiry is the one in force. The
// fleet's own sessions (no tenant) have no such cap. The session itself
// is behind [SessionFactory] / [SessionSandbox]; every worker's is
// [PrimitiveSessions], package sandbox/session: one run of the agent in
// the worker's runner, confined as its tasks are (not at all under
// isolation none), whose file operations serve the home its commands see
// (on a warm slot, the session's own tmpfs), so nothing of a session is
// left on its slot once it ends, whatever ended it. Failure handling: a
// session whose sandbox died, whose TTL passed or that idled (nothing
// running, foreground or background, and no request but status, for its
// idle time) is ended by the reaper every Sweep; Stop
// refuses creates (draining), waits for the sessions until its ctx ends,
// then ends them; a request for an ended session gets sandbox_gone with the
// reason (the last 1024 are remembered). Limits: MaxRequests handled at
// once (an exec holds one while it runs), 1 MiB of data per request, exec
// output events best effort (numbered; the reply says how many).
package worker
