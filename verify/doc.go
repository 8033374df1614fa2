// Package verify decides verify tasks: it checks a machine-written proof
// against an expected statement with a profile's trusted checker and
// returns a [messages.Verdict]. The proofs come from a model rewarded for
// being accepted, so every design choice here is about never accepting a
// proof that does not prove the statement.
//
// # Model
//
// A worker loads [Profiles] from a file ([LoadProfiles]) and calls
// [Checker.Check] with its sandbox's Run as the [RunFunc]. Every step that
// touches the proof runs through that RunFunc, in a sandbox that sees the
// profile's toolchain read-only. A verdict means the check was decided
// (accepted, or rejected with a fixed reason); an error means it could not
// be done: *[InfraError] (retry elsewhere), *[StatementError] (the task's
// own statement or header is broken: report the task invalid), or the
// context's error.
//
// # Coq
//
// Three sandboxed steps, in fresh directories. coqc compiles the proof as
// <Library>_<nonce>.Proof (untrusted) with Warren's policy plugin loaded
// ahead of it (package coqpolicy): Coq's own parser hands the plugin every
// sentence before it runs, so under the profile's host_io: reject a
// command that touches host files, the load path or native code is
// refused before it runs (disallowed_command), and the assumptions the
// proof declares are recorded for declared_axioms: reject. The compile
// reads the stdlib's compiled libraries only (coqHost: a view without
// sources, the real directory hidden) and writes only in its directory,
// where anything besides its outputs rejects. Then coqc compiles a
// generated file that
// elaborates the statement before Requiring the proof, re-enables the
// kernel checks, resolves the theorem with Locate (it must be a constant the
// proof declares, not a notation or alias) behind a guard that stops before
// anything of the proof is elaborated, defines check : expected :=
// @Proof.theorem, with the
// Print Assumptions of check redirected to a nonce-named file (trusted);
// coqchk re-checks both .vo files with its own kernel and prints the
// context's axioms and unsafe declarations with fully qualified names
// (trusted; it shares the second step's sandbox, whose output goes to
// files of its own: see trustedSteps). The verdict is read only from those trusted artifacts, never
// from the proof's output. docs/verify.md lists each attack and why it
// fails; testdata/verify/coq holds them and TestCoqCorpus runs them.
//
// # Lean
//
// lean-file, after lean4checker and SafeVerify, runs three sandboxed steps
// in fresh directories: `lake env lean` compiles header+proof to
// Proof.olean (untrusted); it compiles a generated Target.lean holding only
// the header and `theorem Warren_<nonce>.target : (<statement>) := sorry`
// (trusted: the statement in a clean context); the profile's
// warren-lean-check (deploy/lean) reads both oleans as data without
// importing them, replays every constant of Proof.olean through the kernel,
// compares the theorem's type with the target's and collects its axioms,
// and writes one JSON report to a nonce-named file (trusted). The verdict
// comes from that report only. Tested against testdata/lean-file-double;
// the Lean checker has never been compiled here (no Lean). lean-repl keeps
// a [ReplPool] of warm sandboxed REPL processes (header imported once per
// process, one request in flight per process, killed and respawned on
// timeout or protocol anomaly, pre-warmed by [Checker.Start]). A REPL keeps
// every environment, so it only grows: the pool recycles a process after
// Pool.MaxRequests proofs, and when its memory, read through the sandbox's
// run handle (sandbox.Spec.Started, Handle.Memory: anonymous + shmem +
// swap, not the shared page cache of mmapped .olean files) after a proof
// or before the next, is above Pool.MaxMemoryBytes. Recycling never
// changes a finished proof's verdict; [ReplPool.Stats] counts recycles by
// cause. The REPL runs proof code in the checking process, so its
// verdicts are weaker than file mode's; docs/verify.md says how.
//
// # Failure handling
//
// Anything unexpected in a trusted artifact (Locate, Print Assumptions,
// coqchk's summary, the Lean report) rejects: fail closed. A step that
// cannot run is an *[InfraError], never a verdict, and is never cached; a
// verdict cache that cannot be read or written is logged and the proof is
// checked as if the cache were empty.
//
// # Limits
//
// Each step has the profile's wall, CPU, memory, process and file-size
// limits, applied by the sandbox and again by prlimit inside it (Coq). A
// step that passes its wall limit is a timeout; one that dies of memory is
// out_of_memory; any other signal is a crash; a sandbox that cannot be set
// up is sandbox_error. The reason of a rejection may be chosen by the
// proof (it can print "out of memory"), acceptance cannot.
//
// # Cache and determinism
//
// [Service] answers a proof decided before (on any host) from a
// [VerdictCache] ([KVCache]: the JetStream bucket warren_verdicts), keyed by
// [CacheKey] over [CheckerVersion], the profile's [Profile.Fingerprint]
// (checker binaries + policy) and the task's text; one flight per key per
// host. Timeouts, out of memory, crashes, sandbox and infrastructure errors
// are never cached. Every verdict carries the fingerprint.
//
// # Worker
//
// [*Service] is the worker's Verifier as it is: worker.Verifier is written
// in this package's [RunFunc] and [Outcome], so dependencies point one way
// (the worker imports verify; verify never imports the worker). Whoever
// builds the Service (cmd/warren's host) calls [Service.Start] after the
// sandbox runner and before the worker, and [Service.Close] after the
// worker has stopped.
//
// # Batches
//
// Package batchfile (verify/batchfile) turns a JSONL file or a batch
// directory into tasks for `warren verify`.
package verify
