// Package sandbox runs one untrusted command at a time in a Linux sandbox
// and reports how it ended.
//
//	r, err := sandbox.New(sandbox.Config{})         // auto mode
//	res, err := r.Run(ctx, sandbox.Spec{Argv: []string{"lean", "Main.lean"}, ReadOnly: []string{"/opt/lean"}})
//	// err: *SetupError (the command never ran), ErrUnavailable, ErrInvalidSpec
//	// res: ExitCode, Signal, TimedOut, PeakMemory, InForce ("namespace"), ResourceLimits
//
// Every binary that runs sandboxes must call MaybeInit first thing in main
// (and in TestMain): the sandbox init is this same binary re-executed.
//
// # Namespaces
//
// Namespace mode gives each run new user, mount, pid, net, ipc, uts and
// cgroup namespaces, plus (when the kernel's Landlock ABI meets
// Config.LandlockMinABI) the Landlock+seccomp layer applied by the same init
// as its last restriction before exec; Result.InForce says which
// ("namespace" or "namespace+landlock+seccomp"). The worker clones the init (/proc/self/exe with argv[0]
// "warren-sandbox-init") straight into them and sends it an initConfig on a
// pipe; the init builds the view, drops everything and execs the command,
// which becomes pid 1 of its pid namespace. So:
//
//   - when the command exits, the kernel kills everything it started,
//     double-forked setsid daemons included, before Run returns;
//   - the wall limit (and ctx) SIGKILL the init: the whole tree goes;
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
// groups; the uid returns to the pool only once teardown is verified (the
// run's cgroup is empty, or no process of the uid is left in /proc, and the
// scratch directory is gone), otherwise it is quarantined. An ordinary
// worker maps its own uid and gid 1:1 (it cannot map any other); its
// supplementary groups stay, as they would for any process it starts.
//
// The init keeps four capabilities inside the new user namespace only
// (CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP, CAP_SYS_RESOURCE, as ambient
// caps across its own exec) and clears all of them before exec'ing the
// command.
//
// Start cost: the init is this (large) binary re-executed, so a cold run
// pays clone + Go runtime start + package init before any setup.
// Config.Prestart keeps that many inits started ahead, each cloned with its
// uid and blocked on its config, on the goroutine (locked thread) that will
// serve its run; their stdio are pipes pumped to the Spec's, so runs whose
// stdio are *os.File start cold. docs/benchmarks.md has the numbers.
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
//	/dev/shm, /tmp                      private tmpfs, Limits.TmpSize, nosuid,nodev,noexec
//	/proc                               fresh procfs of the run's pid namespace
//	the scratch directory               read-write bind at its host path: the only
//	                                    writable host path (nosuid,nodev)
//
// Binds are not recursive (a mount nested under a source is not carried
// in) and never follow a symlink: sources are resolved by the worker, then
// opened with openat2(RESOLVE_NO_SYMLINKS) and bound through that fd, and
// mount points are created in the new root component by component without
// following symlinks. Spec.Files are written through os.Root, so links the
// task left in a reused scratch directory are not followed either. The
// network is none (no interface up; even 127.0.0.1 is unreachable) unless
// Spec.Network is loopback (a private lo, up). Abstract unix sockets of the
// host and of other sandboxes are in other network namespaces.
//
// # Resource limits
//
// Memory, processes, file size, open files and CPU are rlimits of the
// command (RLIMIT_AS, RLIMIT_NPROC counted per user namespace, RLIMIT_FSIZE,
// RLIMIT_NOFILE, RLIMIT_CPU). Where the worker can create cgroups (root on
// cgroup v1 with memory and pids controllers, or a delegated cgroup v2
// subtree where memory and pids can be enabled for children of the
// worker's cgroup) each run also gets a child cgroup of the worker's own with the
// memory and pids limits, and PeakMemory comes from it; otherwise
// Result.ResourceLimits says "rlimits only (why)" and `warren doctor` says
// how to fix it. Nothing pretends: the field names what was enforced.
//
// # Kernel requirements
//
// Linux >= 5.11 (openat2 5.6, close_range with CLOSE_RANGE_CLOEXEC 5.11) with user namespaces allowed
// for the worker's user: not restricted by AppArmor
// (kernel.apparmor_restrict_unprivileged_userns), not disabled
// (user.max_user_namespaces > 0, kernel.unprivileged_userns_clone where it
// exists), and no seccomp filter blocking clone/unshare (containers).
// Probe (`warren doctor`) launches a real probe sandbox (creating a
// namespace proves nothing: the probe must mount inside it) and names the
// fix for each failure.
//
// # Limitations
//
//   - No seccomp filter in namespace mode: kernel bugs reachable from an
//     unprivileged user namespace are in scope for an attacker. Nested user
//     namespaces are refused (user.max_user_namespaces is 0 inside the run's
//     user namespace), which keeps most of the namespace code out of reach.
//   - /proc shows the kernel-global files (meminfo, cpuinfo, loadavg): host
//     load and memory size are observable.
//   - Read-only binds and /usr are shared between runs: readable, and
//     usable for file locks, by every sandbox.
//   - With cgroup v1 the cgroup namespace is rooted at the worker's cgroup
//     (the run joins its own cgroup just after clone), so /proc/self/cgroup
//     shows a path relative to it; no cgroup fs is mounted inside.
//   - A worker killed by SIGKILL leaves its runs' scratch directories (the
//     processes die; nobody is left to remove files) and, as root, their
//     cgroups.
//   - The command is pid 1: signals from inside its namespace without a
//     handler are ignored by it, and it reaps (or not) its own zombies.
//   - Linux x86_64 and arm64 only.
//
// # Failure handling
//
// Setup fails closed: if any step fails the command is not executed. The
// init reports the failed step on a status pipe (distinct from the task's
// own exit status: the init writes a marker just before execve, and a
// failure report otherwise), and Run returns a *SetupError naming the step
// (e.g. "mount /tmp", "bind", "pivot_root", "find command") and wrapping
// the errno. An init that dies before reporting yields a SetupError with
// step "init". When the kernel refuses the namespaces themselves the
// SetupError (step "start init") also wraps ErrUnavailable. Teardown
// failures (a cgroup that will not go, a uid with processes left) are
// logged and quarantine the uid; they do not change the Result of a run
// that completed.
package sandbox
