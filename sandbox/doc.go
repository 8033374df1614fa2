// Package sandbox runs one untrusted command at a time in a Linux sandbox
// and reports how it ended.
//
//	r, err := sandbox.New(sandbox.Config{})         // auto mode; starts nothing
//	err = r.Start(ctx)                              // sweeps dead workers' leftovers, starts the warm pool
//	defer r.Close()                                 // kills the warm sandboxes, waits for the pool's goroutines
//	res, err := r.Run(ctx, sandbox.Spec{Argv: []string{"lean", "Main.lean"}, ReadOnly: []string{"/opt/lean"}})
//	// err: *SetupError (the command never ran), ErrUnavailable, ErrInvalidSpec
//	// res: ExitCode, Signal, TimedOut/Timeout, ExecError, OOMKills, DiskFull, PeakMemory, InForce ("namespace"), ResourceLimits
//
// The sandbox init (package sandbox/initproc) is the small binary
// cmd/warren-sandbox-init, found next to the worker's executable (`make
// build` installs both) or named by Config.InitPath; without one, the
// worker's own binary is re-executed as the init, so every binary that runs
// sandboxes must still call MaybeInit first thing in main (and in
// TestMain).
//
// # Lifecycle
//
// New checks the configuration and starts nothing. Start (idempotent)
// sweeps what dead workers left on the host and starts the warm pool;
// Close (idempotent) kills and reaps the warm sandboxes, releases what
// they hold and waits for every goroutine of the pool; Start after Close
// returns ErrClosed. Run does not need Start: a Run before Start (or after
// Close) runs cold, with the host's cgroups and uid pool detected on its
// first use, and sweeps nothing.
//
// # Structure: one seam, one skeleton
//
// What differs between the isolated modes is the mode interface (mode.go):
// validate, warm key, prepare (the home's extras, clone attributes, the
// view), task (the init's task phase and the Layers in force), killTree,
// hostRefused, teardown; one implementation per file, namespaceMode
// (mode_namespace.go) and landlockMode (mode_landlock_linux.go). Mode
// none (mode_none.go) runs no init; auto (mode_auto.go) runs the namespace
// mode and falls back to the Landlock mode on ErrUnavailable. Everything
// else is one skeleton for both modes, cold or warm: run.go (validate →
// warm sandbox or cold → launch → Layers in force) over box.go (identity
// from the uid pool → home → the mode's prepare → cgroup, named in one
// place: unique on the host and tagged with its owner whatever the home,
// since a uid goes back to the pool before its cgroup is removed — and
// giveBack, the mode's teardown), the init protocol in
// init_launch.go. The warm pool is keyed by mode (warm_key.go,
// warm_pool.go); a warm sandbox (warm_sandbox.go) is the skeleton cut in
// two: acquire ahead of its task, the launch when the task arrives. What
// every mode may see of the host is one table with a column per mode
// (host_paths.go); the init's setup steps the worker decides on are typed
// (initproc.Step). No file calls back into a file that calls it.
//
// The disk quota (Limits.Disk, "Disk limit" below) lives in that seam and
// skeleton too, its mechanics in disk_quota.go: acquire bounds every fresh
// home (quotaFor: a root worker mounts the tmpfs on the host before the
// files; otherwise the mode's unprivilegedQuota says where, the init for
// namespaceMode, refused for landlockMode); namespaceMode.prepare puts a
// bounded home's .tmp and .shm into the view (boundView); a home the init
// mounts is opened through /proc/<init>/root and filled (box.hold) after
// the init's prepare phase, in runCold (launchInit's beforeTask) and in
// warmSandbox.serve; box.finished sets Result.DiskFull and calls
// Spec.Finished before giveBack in both paths; warmServes (in warmPool.take)
// keeps runs out of warm homes whose bound does not fit; sweepStale
// unmounts a dead root worker's homes; the init's side is
// initproc/home_quota.go.
//
// One task's path (auto, namespaces available): Run (sandbox.go) →
// runAuto (mode_auto.go) → runIsolated (run.go): namespaceMode.validate
// and warmKey (mode_namespace.go, spec_validate.go, warm_key.go) →
// warmPool.take (warm_pool.go); cold: runCold → acquire (box.go: internal/ident,
// scratch.go, namespaceMode.prepare, internal/cgroup) → namespaceMode.task
// (env.go, rlimits.go, landlock_policy_linux.go, host_paths.go, hide.go) →
// launchInit (init_launch.go; the init itself is sandbox/initproc) →
// giveBack (box.go → namespaceMode.teardown); warm: runWarm →
// warmSandbox.prepare and run (warm_sandbox.go, stdio_pipes.go) → the
// same task and teardown. A new per-run input (a limit) flows from the
// Spec through mode.prepare (what the init builds before the task) or
// mode.task (the task phase), and cgroup.Group.SetLimits for the cgroup.
//
// # Namespaces
//
// Namespace mode gives each run new user, mount, pid, net, ipc, uts and
// cgroup namespaces, plus (when the kernel's Landlock ABI meets
// Config.LandlockMinABI) the Landlock+seccomp layer applied by the same init
// as its last restriction before exec; Result.InForce says which
// ("namespace" or "namespace+landlock+seccomp"). The seccomp filter of
// that layer (and of the Landlock-only mode) refuses creating user
// namespaces (unshare/clone with CLONE_NEWUSER: EPERM; clone3: ENOSYS, so
// libc falls back to clone, which the filter can inspect) and AF_UNIX
// socket(2) unless Spec.UnixSockets (Landlock below ABI 9 does not govern
// connect on pathname sockets; socketpair stays allowed), besides the
// socket families, io_uring, keyrings, bpf, perf and userfaultfd. The worker clones the
// init straight into them and sends it an initConfig on a pipe; the init
// builds the view, drops everything and execs the command, which becomes
// pid 1 of its pid namespace. So:
//
//   - when the command exits, the kernel kills everything it started,
//     double-forked setsid daemons included, before Run returns;
//   - the wall limit (and ctx) SIGKILL the init: the whole tree goes
//     (what then holds the end back is below, "The end of a task");
//   - the init carries PR_SET_PDEATHSIG=SIGKILL, set at clone time by a
//     goroutine locked to its OS thread until the run ends (the signal is
//     tied to the creating thread, not the process), so a worker that dies,
//     even by SIGKILL, takes its sandboxes with it;
//   - the command runs with its own session and process group, a non-zero
//     uid, no capabilities in any set (bounding and ambient included),
//     no_new_privs, RLIMIT_CORE 0, the rlimits of Spec.Limits, no fd beyond
//     stdio, and an environment built from an allow-list (HOME = scratch,
//     TMPDIR = /tmp, PATH pruned to directories that exist in the view).
//
// Ids: a root worker gives every concurrent run its own host uid (= gid)
// from Config.UIDBase/UIDCount, mapped 1:1 inside, with no supplementary
// groups. The range must be mapped in the worker's own user namespace
// (/proc/self/uid_map and gid_map: root of a container whose namespace
// maps only 0..65535 cannot give a file to uid 1900000000, chown fails
// with EINVAL). By default it is DefaultUIDBase.. where that is mapped
// (any host outside a user namespace), else the top of the ids mapped in
// both maps, skipping ids below 1000, 65534 and 65535 and ids named in
// /etc/passwd or /etc/group (in a 0..65535 container: 64510..65533); an
// explicit range outside the maps fails New with the maps and the fix
// (ErrUIDRangeUnmapped); the uid returns to the pool only once teardown is verified (the
// run's cgroup is empty, or no process of the uid is left in /proc, and the
// scratch directory is gone), otherwise it is quarantined. An ordinary
// worker maps its own uid and gid 1:1 (it cannot map any other); its
// supplementary groups stay, as they would for any process it starts.
//
// Scratch directories live under Config.ScratchRoot, by default one per
// user ($TMPDIR/warren-sandboxes-<euid>), so root and ordinary users on one
// host never share it: created 0700 (0711 as root, for its sandbox uids),
// and refused (ErrScratchRootNotPrivate) when it exists as a symlink, owned
// by another user or writable by others, since anyone may create that
// name first in a shared /tmp.
//
// The init keeps four capabilities inside the new user namespace only
// (CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP, CAP_SYS_RESOURCE, as ambient
// caps across its own exec) and clears all of them before exec'ing the
// command.
//
// # Start cost: warm sandboxes and the lean init
//
// Config.Prestart keeps that many warm sandboxes per view: an init cloned
// into fresh namespaces with its uid mapped, attached to a fresh cgroup,
// that has built the whole view (root tmpfs, binds, /dev, /proc, /tmp, a
// fresh scratch directory bound at its place, pivot_root, network) and
// blocks reading its task. The view depends only on the warm key
// (Spec.ReadOnly, Spec.Hide, Spec.Network, Spec.TmpInHome,
// Limits.TmpSize; the Landlock layer is per Runner): a run whose key
// matches takes a warm sandbox, the worker writes
// the task's files into its scratch directory, sets the cgroup limits and
// sends the task (argv, env, cwd, rlimits, Landlock layer); the init
// applies those and execs. Anything else starts cold, and its view gets a
// pool of its own (at most 4 views; the least recently used is dropped).
// In namespace mode with the Landlock and seccomp layers and bounded
// homes (Config.Defaults.Disk, as the worker has them) a warm sandbox is
// a template reused task after task ("Templates"); otherwise each warm
// sandbox serves exactly one run. The pool refills in the background once
// the run that emptied it is over (so the refill does not compete with it
// for the CPU); a template running a task counts as the pool's. A warm sandbox whose
// setup fails is discarded with the step logged; the run starts cold. Its
// stdio are pipes the worker copies to and from the Spec's, so runs whose
// stdio are *os.File (a terminal), or with Spec.Scratch, start cold. Each
// idle one holds a sandbox uid, a scratch directory, a cgroup and a few
// MB; it dies with the worker (Pdeathsig on the locked thread that serves
// it) and Runner.Close kills and reaps them and releases all of that.
// Runner.Start starts the pool; without Start every run is cold. A
// toolchain symlink retargeted after a warm view was built is seen with
// its old target until that sandbox is used; a hidden path (Spec.Hide)
// is likewise resolved, and covered only if it exists, when the view is
// built.
//
// The Landlock mode keeps warm sandboxes the same way (key: Spec.ReadOnly,
// Spec.Hide and Spec.Network): uid, home with its TMPDIR, cgroup, and an init that
// has made itself a session leader and waits, as the worker's user and
// unrestricted, for its task; everything else (files, limits, rlimits,
// Landlock, seccomp, the uid drop) happens when the task arrives.
//
// In both modes the warm init also builds, before it reports ready, the
// Landlock ruleset a task of its key carries (its paths are known: home,
// toolchain, network), and when the task arrives enforces it only if the
// task's policy is equal to the one it was built from (else it builds the
// task's own): the ~30 path opens and rule calls are off the critical path.
//
// # Templates
//
// A template is a warm sandbox's init that builds the view once and stays
// (initproc/template.go): pid 1 of the template's pid namespace, holding
// the user, network, UTS and cgroup namespaces, the view's mount namespace,
// the template's uid, home directory and cgroup. It never runs a task. For
// each task the worker sends it, over a SOCK_SEQPACKET socket, the task's
// stdio and a config and status pipe (SCM_RIGHTS); it forks (no new user
// namespace, so the clone copies a small static process instead of the
// worker) a fresh init into new pid, IPC and mount namespaces and hands
// the worker its pidfd. That child mounts its own /proc, a home tmpfs of
// the task's disk limit over the template's home, and the home's .tmp and
// .shm at /tmp and /dev/shm, sets its oom_score_adj to 1000, builds the
// task's Landlock ruleset and reports ready; the worker writes the task's
// files into the fresh home (through /proc/<child>/root, as the template's
// uid: the tmpfs belongs to the template's user namespace), and the child
// goes on exactly as any warm init: chdir, rlimits, capability drop,
// Landlock, seccomp, exec. The parent reaps it and reports its wait
// status, own CPU time and rusage. While the template is idle, its next
// task's init is made ahead (forked, mounted, ruleset built, at the
// default disk limit and with the cgroup at its default limits), so a
// task that arrives pays only its files, its limits and its exec; a task
// with another disk limit gets a child forked for it. On an otherwise idle
// host, when another waiting template of the pool has its init made, a
// template back from a task defers making its own (the refill's deferral,
// warm_pool.go: up to 10 ms, ended by the pool's next take), so the fork
// and the init's start do not compete with the result's store and
// delivery and its client's exit. The worker kills it through the pidfd
// (wall timeout, cancel), which takes its pid namespace with it.
//
// Nothing a task can change outlives it, each for its own reason: its
// processes die with its pid namespace, and the worker checks the
// template's cgroup holds the parent alone before the template serves again
// (else the template is discarded); files die with its home, /tmp and
// /dev/shm (fresh tmpfs in its mount namespace); mounts with that namespace
// (and it has no capability to make any); SysV IPC with its IPC namespace;
// environment, rlimits, Landlock and seccomp are per process and set in
// the child; keyrings (per uid in the template's user namespace) are out of
// reach because the seccomp layer refuses keyctl, add_key and
// request_key, which is why templates need that layer; abstract unix
// sockets die with the processes holding them (and Landlock scoping keeps
// each task from another's); the cgroup's peak memory is reset for each
// task (v1 memory.max_usage_in_bytes; v2 memory.peak per descriptor, else
// no cgroup peak is reported) and its OOM kills are counted from the task's
// start. The hostname and the network namespace's sysctls need
// capabilities a task never has. TestTemplateCarriesNothingOver leaves a
// trace of each kind (seeing it itself: the control) and the next task on
// the same template finds none; docs/security.md has its mutation record.
//
// What a template's task shares with its parent, the template: the cgroup
// (the parent's few MB count against Limits.Memory; its threads are added
// to the pids limit and to RLIMIT_NPROC, so the task gets its whole
// Limits.Processes), the user namespace and uid, and the network
// namespace (no interface but lo, down unless Network is loopback). A
// template that dies, or that cannot start a task, is discarded and
// its task, which never ran, runs cold.
//
// A cold run pays the init's start: the dedicated init is a static ~3 MB
// binary (x/sys and go-landlock only; the seccomp program arrives
// assembled) that starts in ~5 ms where the 32 MB worker binary took ~24.
// docs/benchmarks.md has the numbers.
//
// # Filesystem
//
// The root is a fresh tmpfs (pivot_root; the old root is detached with
// MNT_DETACH, so neither "..", /proc/1/root nor /proc/self/cwd reach it),
// remounted read-only, holding only:
//
//	/usr, /bin /lib /lib64 /sbin        read-only bind (or the host's symlinks)
//	/etc/{ld.so.cache,ld.so.conf,nsswitch.conf,passwd,group,localtime,hosts}  read-only binds
//	Spec.ReadOnly paths                 read-only binds at the same path; a symlinked
//	                                    path is bound at its target with a symlink at its name
//	/dev/{null,zero,full,random,urandom} device binds; /dev/fd, /dev/std* links
//	/dev/shm, /tmp                      private tmpfs, Limits.TmpSize, nosuid,nodev,noexec;
//	                                    with a disk limit or Spec.TmpInHome the home's .shm
//	                                    and .tmp instead (bound, nosuid,nodev,noexec)
//	/proc                               fresh procfs of the run's pid namespace
//	the scratch directory               read-write bind at its host path: the only
//	                                    writable host path (nosuid,nodev); with a
//	                                    disk limit, a size-capped tmpfs (below)
//	Spec.Hide paths (resolved)          an empty tmpfs, read-only, nosuid,nodev,noexec,
//	                                    over each one a bind shows, after every other
//	                                    mount: nothing listed, ENOENT below; a template's
//	                                    task covers again those under its own /tmp
//
// The task has no capability, so it can neither unmount nor remount any
// of them. Landlock-only mode has no view: a hidden path is one no rule
// covers. Landlock cannot deny below a directory it allows, so the
// worker (hide.go) replaces a read or read+exec rule on an ancestor of a
// hidden path by rules on that ancestor's entries, recursing towards the
// hidden path, which keeps no rule (EACCES on it and below); entries
// that are symlinks get no rule (a link's target keeps the rule that
// covers it, so no link re-opens the hidden path), and the directories
// on the way cannot be listed. With Spec.TmpInHome and a caller's
// directory, the mount points the view makes under /tmp (the home
// itself, bound at its host path, when it lives there) are removed from
// its .tmp after the run, so only what the run wrote is left.
//
// Binds are not recursive (a mount nested under a source is not carried
// in: the sandbox's user namespace inherits it locked, and the kernel
// refuses the bind, which fails as ErrSubmounts naming the mounts and the
// fix, internal/home/submounts.go) and never follow a symlink: sources are resolved by the worker, then
// opened with openat2(RESOLVE_NO_SYMLINKS) and bound through that fd, and
// mount points are created in the new root component by component without
// following symlinks. Spec.Files are written through os.Root, so links the
// task left in a reused scratch directory are not followed either. The
// network is none (no interface up; even 127.0.0.1 is unreachable) unless
// Spec.Network is loopback (a private lo, up). Abstract unix sockets of the
// host and of other sandboxes are in other network namespaces.
//
// # The end of a task
//
// The end of a task is the worker's decision, never the task's. A task
// ends when its command exits, or at its wall limit, its CPU limit or a
// cancel of Run's ctx; Run then returns within 2 s (the tests' bound,
// with a second of slack for a loaded host) with nothing of the task
// left, and the sandbox, a template included, serves the next task.
//
// The command is the child of the worker (a template's task: of the
// template), so it can make that parent the tracer of any of its threads
// without asking: PTRACE_TRACEME links the calling thread to the
// process's parent. An exited traced thread stays a zombie until its
// tracer waits for it, and until then the kernel does not report the
// command's end (and pid 1 of a pid namespace cannot finish killing its
// namespace), SIGKILL or not; a traced process's stops are reported to
// its tracer as if it had asked for them. So whoever is the command's
// parent waits for its end as a tracer must:
//
//   - the worker watches the command's pidfd, and looks again on a clock
//     (from 20 ms, doubling to 500 ms): it reaps the command's exited
//     traced threads each time, takes a command whose leader has exited
//     with its end held back (a thread traced by another of its
//     processes) for ended and kills its tree, and collects the command
//     only once its end is reported, a stop or trap being no end;
//   - once the run is being killed, it looks every 1 to 50 ms, killing
//     the run's tree again each time (Landlock mode: the session, then
//     what left it, by the run's cgroup, uid or the worker's sandboxed
//     orphans), for 1 s at most: a run still not reported ended then
//     fails (an error, not a Result: a process is stuck in the kernel)
//     and its uid is quarantined by the teardown check;
//   - a template waits for every child and tracee (waitid P_ALL,
//     __WALL), reaps the task's traced threads as they exit and consumes
//     stops; the worker waits for its report of a killed task for 1 s at
//     most, and otherwise discards the template (the run fails);
//   - a session's agent does the same for its commands (see package
//     sandbox/session).
//
// What is reaped, per mode: in namespace mode the command is pid 1 of
// its pid namespace, and its end takes every process of the namespace
// with it; in Landlock mode the task is a child subreaper, its tree's
// orphans come to it while it lives, and its end (or the kill) kills its
// session and what left it, the teardown sweeping again until the run's
// cgroup, uid or the worker's sandboxed orphans are gone (an orphan is
// stopped first with its whole tree and its process groups, then killed:
// a fork storm outruns a kill); dead leftovers that were the worker's
// own children (a sibling the task made with CLONE_PARENT) are reaped,
// so the worker keeps no zombie.
//
// ptrace stays allowed, PTRACE_TRACEME included: debuggers (gdb's run
// forks a child that calls it, strace attaches) are a real need inside a
// sandbox, and the seccomp layer could not cover the namespace mode
// alone anyway. A task traces only within its own sandbox (pid namespace,
// Landlock's ptrace scoping, the uid), and what it makes its parent
// trace is reaped as above; a task that makes its parent its tracer and
// then stops (a trap at its exec) stays stopped until its wall limit.
//
// # Resource limits
//
// Processes, file size, open files and CPU are rlimits of the command
// (RLIMIT_NPROC counted per user namespace, RLIMIT_FSIZE, RLIMIT_NOFILE,
// RLIMIT_CPU). Where the worker can create cgroups (root on cgroup v1 with
// memory and pids controllers, or a delegated cgroup v2 subtree where
// memory and pids can be enabled for children of the worker's cgroup) each
// run also gets a child cgroup of the worker's own with the memory and
// pids limits, and PeakMemory comes from it; otherwise
// Result.ResourceLimits says "rlimits only (why)" and `warren doctor` says
// how to fix it. Nothing pretends: the field names what was enforced.
// The init is born in its cgroup: on v2 by CLONE_INTO_CGROUP, on v1 by
// cloning it from a thread that stepped into the run's cgroups and back
// (internal/cgroup/v1_born.go; the attach through cgroup.procs, which waits for an
// RCU grace period, is the fallback).
//
// Memory is the cgroup's limit where the run has a cgroup: it bounds the
// whole tree's resident memory (v1: memory.limit_in_bytes and, where swap
// is accounted, memory.memsw.limit_in_bytes; v2: memory.max with
// memory.swap.max 0), and RLIMIT_AS is not set (an address-space
// cap would also refuse what runtimes only reserve: a static Go program
// reserves ~1 GB at start and runs under a 64 MiB cgroup limit). Without
// a cgroup (an unprivileged worker) the memory limit is RLIMIT_AS of each
// process, and it binds only the task's program, never the init: the Go
// init's own address space is already ~1.2 GB of reservations, so a
// RLIMIT_AS applied while it still runs made its later allocations fail
// ("sandbox init died during setup", or the init's "fatal error: runtime:
// cannot allocate memory" reported as the task's exit 2). The init
// therefore prepares everything the exec needs (path, argv and envp as C
// arrays, the clamped limits, its report buffer), runs the garbage
// collector once and switches it off, and then, from a nosplit function
// making raw system calls only (no allocation, no stack growth, no
// scheduler), sets every rlimit (RLIMIT_AS last), writes its exec marker
// and calls execve, which replaces the address space. A failed execve is
// reported with the same raw calls (a fixed-size record on the status
// pipe) and the init exits. Limits hold down to 64 MiB for a static
// program and 256 MiB for python3 in every mode (tests); a Go program needs
// a cgroup or a limit above its ~1.2 GB of reservations. The init itself
// is in the run's cgroup from before it reads its task: on cgroup v2
// (born there, CLONE_INTO_CGROUP) its few MB of resident setup memory
// count against the limit until the exec, so a limit of a few MiB can end
// the init during setup (an infrastructure error); on v1 its runtime's
// pages stay charged to the worker's cgroup (4 MiB runs /bin/true here).
// Where the init must be moved into its cgroup (v1 always: writing
// cgroup.procs waits for an RCU grace period, 1-10 ms on a busy host),
// the worker sends the view first and attaches the init while it builds
// it, as for a warm sandbox; the task follows once the init is attached
// and has reported its view built.
//
// # Disk limit
//
// Limits.Disk (> 0) bounds the home, its TMPDIR included, with a tmpfs of
// that size (disk_quota.go): writes past it fail with ENOSPC and
// Result.DiskFull is set (statfs of the home before teardown: no block
// left). A root worker mounts it on the host at the run's fresh scratch
// directory, before Spec.Files are written (both modes; a warm sandbox is
// built with Config.Defaults.Disk and remounted to the task's size; with
// no default limit warm homes are unbounded and serve only unbounded
// runs); the home stays a host directory for Spec.Finished and any
// host-side reader.
// An unprivileged worker in namespace mode has its init mount it in its
// own mount namespace over the scratch directory before the binds; the
// init then waits (the prepare phase of warm sandboxes) while the worker
// opens the home through /proc/<init>/root, writes Spec.Files into it and
// keeps that O_PATH descriptor, which pins the tmpfs after the namespace
// is gone until teardown (DiskFull and Spec.Finished read it there). Its
// warm sandboxes are built the same way at Config.Defaults.Disk, which it
// cannot resize: they serve runs with that limit, others start cold. An
// unprivileged worker in Landlock-only mode cannot mount: a run with a
// disk limit fails (ErrDiskQuotaUnavailable) unless the limit is off. Spec.Scratch (a caller's directory) is never covered:
// a tmpfs over it would hide its contents and lose the writes.
//
// tmpfs pages are charged to the memory cgroup of the process that writes
// them, so the task's files count against Limits.Memory too (no separate
// budget: files and processes share the memory limit, and a disk limit
// above the memory limit ends in an OOM kill rather than ENOSPC). Without
// a cgroup the tmpfs size is the only bound. In namespace mode /tmp and
// /dev/shm are bound from the home's .tmp and .shm (nosuid, nodev,
// noexec), so the one limit covers them (Limits.TmpSize is then unused).
// A SIGKILLed root worker's homes stay mounted until the next Runner on
// that scratch root sweeps them (sweep.go). Mode none has no disk limit
// for its command.
//
// The worker's own writes into a home (the task's files, a session's
// file methods through Spec.HomeReady) count against the same limit:
// HomeView.Quota is the home's tmpfs at its size (files.HeldByFilesystem),
// which holds the worker as it holds the command, so a write past it is
// refused whole with files.ErrDiskFull naming the limit; a home the limit
// asks for but no tmpfs bounds (Spec.Scratch, mode none) gets a quota the
// worker holds by counting the home's usage (files.HeldByCount).
// Cost, measured (BenchmarkDiskQuota, root, 2 loaded cores):
// mount ~30 µs and lazy unmount ~100-150 µs per run, within the noise of
// a 12-16 ms cold run; an unprivileged worker's cold bounded run pays
// +4-6 ms for the prepare handshake's round trip (its warm runs do not).
//
// Package default: no disk limit (DefaultLimits.Disk 0); the worker and
// `warren sandbox run` pass DefaultDisk (1 GiB) unless told otherwise.
//
// What ended a run is reported, not guessed from the signal alone:
// Result.Timeout is "wall" when the wall limit (or nothing else) killed
// the tree, "cpu" when the command used its CPU time: RLIMIT_CPU sends
// SIGXCPU at the limit (rounded up to whole seconds) and SIGKILL a second
// later; in namespace mode the command is pid 1 of its pid namespace and
// ignores SIGXCPU, so a SIGKILL that the worker did not send, of a command
// whose own CPU time (read from its zombie's /proc stat before the reap)
// reached the limit, is the CPU limit too. Result.OOMKills counts the
// run's processes (the command's children included) the OOM killer killed
// for the run's memory limit, from its cgroup (v1 memory.oom_control
// oom_kill, v2 memory.events oom_kill): a command whose child was killed
// and which then exits 0 shows it. Without a cgroup it is 0: RLIMIT_AS
// makes allocations fail (ENOMEM, MemoryError) rather than kill, and a
// kill by the host-wide OOM killer is not attributed to the run (the
// process shows as SIGKILL).
//
// # Observing a run
//
// Spec.HomeReady, when set, is called once the run's home holds the
// task's files and before the command runs (every mode, mode none
// included; cold, warm and templates) with a HomeView: the directory the
// command will see as $HOME as the worker reaches it (the host directory,
// or /proc/self/fd/<fd>/. of the descriptor held on a home its init
// mounted, such as a template task's fresh tmpfs, whose host path shows the
// template's directory under it), the sandbox's ids, and whether the worker
// must act with them as its filesystem ids (AsOwner). The session
// primitive opens its file operations there. An error from it fails the
// setup (step "home ready") and the command never runs.
//
// Spec.Started, when set, is called once the command has been exec'd (cold
// or warm, namespace or Landlock mode; not in mode none, not when setup
// failed) with a Handle on the run. Handle.Memory is what only the run's
// end gives back: anonymous memory, tmpfs/shm pages and swap, read from the
// run's cgroup (v1 memory.stat total_rss + total_shmem + total_swap; v2
// memory.stat anon + shmem, plus memory.swap.current) or, without one,
// summed over the command and its descendants from /proc/<pid>/status
// (RssAnon + RssShmem + VmSwap). Page cache and mapped files are left out:
// they are shared (a toolchain's mmapped libraries) and reclaimable. A
// long-lived process (the Lean REPL pool) uses it to recycle itself on
// growth. The Handle is safe for concurrent use; the command's pid is
// pinned by a pidfd, so once the command is reaped its methods return an
// error wrapping ErrRunEnded, never a reading of a reused pid.
//
// # Kernel requirements
//
// Linux >= 5.11 (openat2 5.6, close_range with CLOSE_RANGE_CLOEXEC 5.11) with user namespaces allowed
// for the worker's user: not restricted by AppArmor
// (kernel.apparmor_restrict_unprivileged_userns), not disabled
// (user.max_user_namespaces > 0, kernel.unprivileged_userns_clone where it
// exists), and no seccomp filter blocking clone/unshare (containers).
// Probe (`warren doctor`) launches a real probe sandbox per mode, with the
// uid range and scratch root the worker would use (creating a namespace
// proves nothing: the probe must mount inside it), says what each
// isolation value gives from the probes that ran (never ok for a mode
// whose probe failed), and names the fix for each failure. Where the host refuses the namespace mode itself
// (the init's clone refused, or its first mount in the fresh namespaces
// refused as under AppArmor's restriction) the error wraps ErrUnavailable
// and `auto` runs the Landlock mode instead; the namespace mode's warm
// pool stops trying, the Landlock mode's stays warm. The tests reproduce
// both hosts with seccomp filters (sandboxtest.EnterContainer).
//
// # Limitations
//
//   - No seccomp filter in namespace mode: kernel bugs reachable from an
//     unprivileged user namespace are in scope for an attacker. Nested user
//     namespaces are refused (user.max_user_namespaces is 0 inside the run's
//     user namespace), which keeps most of the namespace code out of reach.
//   - Landlock-only mode, ordinary-user worker (no pid namespace, no
//     cgroup, no uid of the run): the task and the worker are child
//     subreapers and the teardown kills, with their trees, and reaps the
//     worker's children that are sandboxed (NO_NEW_PRIVS, more seccomp
//     filters than the worker) and no live init (orphan_sweep_linux.go). A program that
//     embeds the Runner and starts its own seccomp'd children would see
//     them swept; a SIGKILLed worker leaves its runs' leftovers.
//   - Spec.UnixSockets in Landlock-only mode makes the host's pathname
//     sockets reachable again below Landlock ABI 9; the worker sets it only
//     for exec profiles the operator opted in (--unix-socket-profile) and
//     never without a mount namespace.
//   - /proc shows the kernel-global files (meminfo, cpuinfo, loadavg): host
//     load and memory size are observable.
//   - Read-only binds and /usr are shared between runs: readable, and
//     usable for file locks, by every sandbox.
//   - With cgroup v1 the cgroup namespace is rooted where the init was
//     cloned: at the run's own cgroup when it was born there (/proc/self/
//     cgroup shows "/"), at the worker's when it had to be attached after
//     the clone (cgroup.Group.CloneInside's fallback: it then shows the run's
//     cgroup name relative to the worker's); no cgroup fs is mounted inside.
//   - A worker killed by SIGKILL leaves its runs' scratch directories (the
//     processes die; nobody is left to remove files) and, as root, their
//     cgroups, until the next Runner on that scratch root starts: names
//     carry their owner (worker pid and start time) and Start sweeps those
//     of dead owners (under its own cgroup only; names from before this
//     scheme are left alone), on the default root also in the old shared
//     $TMPDIR/warren-sandboxes when this user owns it.
//   - The command is pid 1: signals from inside its namespace without a
//     handler are ignored by it (SIGXCPU too: the CPU limit ends it with
//     the SIGKILL a second after the limit), and it reaps (or not) its own
//     zombies.
//   - A task may trace its own processes (ptrace stays allowed: "The end
//     of a task"); one that makes the worker its tracer and stops is not
//     resumed: it ends at its wall limit.
//   - Linux x86_64 and arm64 only.
//
// # Failure handling
//
// Setup fails closed: if any step fails the command is not executed. The
// init reports the failed step on a status pipe (distinct from the task's
// own exit status: the init writes a marker just before execve, and a
// failure report otherwise), and Run returns a *SetupError naming the step
// (e.g. "mount /tmp", "bind", "pivot_root", "rlimit") and wrapping
// the errno. An init that dies before reporting yields a SetupError with
// step "init". When the kernel refuses the namespaces themselves the
// SetupError (step "start init") also wraps ErrUnavailable. Teardown
// failures (a cgroup that will not go, a uid with processes left) are
// logged and quarantine the uid; they do not change the Result of a run
// that completed. A killed run whose end is still not reported 1 s after
// the kill (a process stuck in the kernel), or whose template does
// not report it, fails with an error and no Result: the worker retries
// it as any infrastructure failure, and the template is discarded.
//
// A command that cannot be executed once the sandbox is set up (not found
// on the sandbox's PATH or at its path, not executable, not a valid
// executable, an argument list the kernel refuses with E2BIG) is the
// task's failure, not the sandbox's: as a shell, Run returns a Result with
// ExitCode 127 (ENOENT) or 126 (anything else), Result.ExecError set and
// "warren: <command>: command not found" (or ": cannot execute: <errno>")
// written to Spec.Stderr; no error, so a worker stores it as failed and
// never retries it. Mode none does the same.
package sandbox
