// Package sandbox runs one untrusted command at a time in a Linux sandbox
// and reports how it ended.
//
//	r, err := sandbox.New(sandbox.Config{})         // auto mode; starts nothing
//	err = r.Start(ctx)                              // sweeps dead workers' leftovers, starts the warm pool
//	defer r.Close()                                 // kills the warm sandboxes, waits for the pool's goroutines
//	res, err := r.Run(ctx, sandbox.Spec{Argv: []string{"lean", "Main.lean"}, ReadOnly: []string{"/opt/lean"}})
//	// err: *SetupError (the command never ran), ErrUnavailable, ErrInvalidSpec
//	// res: ExitCode, Signal, TimedOut/Timeout, ExecError, OOMKills, DiskFull, PeakMemory, InForce, ResourceLimits
//
// # Model
//
// A Runner runs Specs in one of four isolations: namespace (fresh user,
// mount, pid, net, ipc, uts and cgroup namespaces with an allow-list root,
// plus the Landlock and seccomp layer where the kernel has it), Landlock
// (Landlock and seccomp alone, for hosts without user namespaces), auto
// (namespace, falling back to Landlock when the host refuses namespaces)
// and none (trusted commands only). What differs between the two isolated
// modes is one interface, mode; everything else of a run is one skeleton:
//
//	Run → mode.validate → warm sandbox of the spec's warm key, or cold:
//	acquire (identity → home → mode.prepare → cgroup) → mode.task →
//	launch the init → the command runs → its end → giveBack (teardown)
//
// The init (package initproc, the static binary cmd/warren-sandbox-init)
// builds what the worker decided and execs the command. A warm sandbox is
// that skeleton cut in two: acquired and built ahead of its task, launched
// when the task arrives. The warm pool keeps them per view (the warm key);
// in namespace mode with the layers and bounded homes a warm sandbox is a
// template: its init stays as the parent of task after task, forking each
// one into fresh pid, IPC and mount namespaces, and nothing a task changes
// outlives it.
//
// The packages under sandbox, one mechanism each; none imports sandbox:
//
//	initproc           the init: view, mounts, rlimits, capabilities, Landlock, seccomp, exec; templates
//	internal/cgroup    a run's cgroup (v1 or v2): limits, attach, peak memory, OOM kills, kill and remove
//	internal/ident     the uid pool (host-wide leases, quarantine) and the id maps it must fit in
//	internal/home      scratch roots, a home's tmpfs bound (the disk limit), submounts of binds
//	internal/seccomp   the seccomp program the init loads (policy in internal/seccomppolicy)
//	internal/reap      waiting for a process as a parent and tracer must: every child, every stop
//	files              the files API on a home, inside its quota
//	session            long-lived sandboxes: an agent inside runs commands, files, background work
//	sandboxtest        test fixtures: bwrap baselines, container-like hosts, process tricks
//
// Spec carries the command and everything the run may see and use; Result
// reports how it ended and what was in force (InForce, ResourceLimits).
// Spec.HomeReady, Spec.Started and Spec.Finished observe a run's home and
// process. docs/sandbox-design.md describes each mechanism in full (the
// view, templates, the end of a task, resource and disk limits, kernel
// requirements); docs/security.md lists every property with its probe and
// control, and the mutation record of each boundary.
//
// # Lifecycle
//
// New checks the configuration and starts nothing. Start (idempotent)
// sweeps what dead workers left on the host and starts the warm pool;
// Close (idempotent) kills and reaps the warm sandboxes, releases what
// they hold and waits for every goroutine of the pool; Start after Close
// returns ErrClosed. Run does not need Start: a Run before Start (or after
// Close) runs cold. Every binary that runs sandboxes calls MaybeInit first
// thing in main (and in TestMain): without a dedicated init next to it,
// its own binary is re-executed as the init.
//
// The end of a task is the worker's decision: at its exit, wall or CPU
// limit or a cancel of Run's ctx, every process it started is gone and
// Run returns, whatever the task does to stay (daemons, stops, traced
// threads, fork storms); a run whose end the kernel never reports fails
// with an error and its uid is quarantined.
//
// # Failure handling
//
// Setup fails closed: if any step fails the command is not executed. The
// init reports the failed step on a status pipe distinct from the task's
// exit, and Run returns a *SetupError naming the step (e.g. "mount /tmp",
// "pivot_root") and wrapping the errno; a kernel that refuses the
// namespaces themselves also wraps ErrUnavailable, which auto answers with
// the Landlock mode. Teardown failures (a cgroup that will not go, a uid
// with processes left) are logged and quarantine the uid; they do not
// change the Result of a run that completed. A warm sandbox or template
// that fails any step is discarded and its task, if it never ran, runs
// cold. A command that cannot be executed once the sandbox is set up is
// the task's failure, as a shell reports it: ExitCode 127 or 126,
// Result.ExecError set, the message on Spec.Stderr, no error.
//
// # Limits
//
// Linux 5.11 or later, x86_64 and arm64. Memory and process limits are
// the cgroup's where the worker can create cgroups, else rlimits only (the
// Result says which). Namespace mode alone has no seccomp filter; the
// Landlock-only mode has no pid namespace or view of its own. /proc shows
// the kernel-global files (host load and memory size are observable), and
// read-only binds are shared between runs. A worker killed by SIGKILL
// leaves its runs' scratch directories and cgroups until the next Runner
// on that scratch root sweeps them. docs/sandbox-design.md ("Limitations")
// has the full list.
package sandbox
