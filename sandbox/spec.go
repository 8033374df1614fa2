package sandbox

import (
	"io"
	"time"
)

// Isolation is a requested sandbox mode.
type Isolation string

// Isolation modes. Auto picks the strongest layers the host supports
// (namespaces + Landlock, else Landlock, else refuse). None runs without
// isolation and is honoured only when Config.AllowInsecure is set.
const (
	IsolationAuto      Isolation = "auto"
	IsolationNamespace Isolation = "namespace"
	IsolationLandlock  Isolation = "landlock"
	IsolationNone      Isolation = "none"
)

// Network is a sandbox's network policy.
type Network string

// Network policies: none (no interfaces, the default) or a private loopback.
const (
	NetworkNone     Network = "none"
	NetworkLoopback Network = "loopback"
)

// Spec describes one command to run in a sandbox.
type Spec struct {
	// Argv is the command; Argv[0] is looked up on the sandbox's PATH when it
	// has no slash.
	Argv []string
	// Env is added to the minimal environment the sandbox builds (PATH, HOME,
	// TMPDIR, LANG); HOME and TMPDIR cannot be overridden.
	Env map[string]string
	// Stdin, Stdout and Stderr are connected to the command. Nil Stdin reads
	// as empty; nil Stdout/Stderr discard. In the isolated modes a file
	// open on a terminal is never given to the command: when any of the
	// three is one, the command gets pipes the worker copies.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Files are written into the scratch directory before the command starts,
	// through the files API (relative paths, no symlinks followed).
	Files map[string][]byte
	// Cwd is the working directory relative to the scratch directory.
	Cwd string
	// ReadOnly lists host paths (a profile's toolchain) made visible read-only
	// at the same path inside the sandbox.
	ReadOnly []string
	// Hide lists absolute host directories the run must not see although
	// they lie under a path it is otherwise shown (a system directory such
	// as /usr, a ReadOnly path): e.g. a toolchain's sources under a
	// toolchain that stays visible. Each is resolved as ReadOnly paths are
	// (symlinks followed: the target is what the run would reach and what
	// is hidden); one that does not exist is nothing to hide. In namespace
	// mode an empty, read-only, nosuid/nodev/noexec tmpfs is mounted over
	// it after every bind: listing it shows nothing, anything below is
	// ENOENT, and the task (no capabilities) cannot unmount it. In
	// Landlock-only mode a read or read+exec rule on an ancestor of it is
	// replaced by rules on that ancestor's entries, recursing towards it,
	// so it and everything below have no rule (EACCES); the directories
	// between the ancestor and it cannot be listed then (a rule to list
	// them would let the hidden one be listed too), though their other
	// entries stay readable. Entries that are symlinks get no rule of
	// their own: whatever a link reaches keeps the rule that covers its
	// target. Refused (ErrInvalidSpec, naming Hide[i]): not absolute or
	// not clean, /, in /proc or /dev, overlapping the home or the scratch
	// root, not a directory, or holding a ReadOnly path. Part of the warm
	// key. Mode none (no isolation) hides nothing.
	Hide []string
	// Scratch, when set, is a host directory used as the scratch directory
	// (the only writable host path) instead of a fresh one; it is not removed
	// afterwards. Used by `warren sandbox run --rw`.
	Scratch string
	// TmpInHome makes everything the run writes land in its home, so a
	// caller's Scratch directory holds it after the run (and Finished
	// sees it in a fresh one). Namespace mode: /tmp and /dev/shm are the
	// home's directories .tmp and .shm (made by the worker, owned by the
	// run's uid, bound nosuid,nodev,noexec) instead of private tmpfs of
	// Limits.TmpSize that die with the run; what the view itself makes in
	// them (the mount point of a path it shows under /tmp, such as the
	// home at its host path) is removed from a caller's directory after
	// the run. Landlock-only mode: nothing changes, as there TMPDIR is
	// already the home's .tmp and the host's /tmp and /dev/shm are not
	// writable. A bounded home (Limits.Disk) has them in the home already,
	// and mode none has no view: no effect. Part of the namespace mode's
	// warm key.
	TmpInHome bool
	// Isolation requested for this run; empty means the runner's configured
	// mode.
	Isolation Isolation
	Network   Network
	// UnixSockets lets the task create AF_UNIX sockets (socket(2)) in the
	// modes with the seccomp layer, for programs that serve or use a unix
	// socket in their own home. Off by default: Landlock below ABI 9 does
	// not govern connect on pathname sockets, so in Landlock-only mode the
	// host's sockets (/tmp, /run, /var/tmp) become reachable with it; in
	// layered mode only sockets inside the private view are. socketpair(2)
	// is always allowed. Not yet exposed in profiles or tasks.
	UnixSockets bool
	Limits      Limits
	// Started, when set, is called once the command has been exec'd (its
	// sandbox is set up), with a Handle that observes the run: e.g. a
	// caller that keeps one process alive across many requests reads its
	// memory between them. It runs on the goroutine that waits for the
	// command, so it must return promptly. It is not called when the
	// command never ran, nor in mode none (no isolation).
	Started func(Handle)
	// Finished, when set, is called once the command's whole tree has
	// ended and before the home is torn down, with a path of the home
	// the worker can read (read it through sandbox/files: the task wrote
	// it): its host directory, or, when its init mounted the home's tmpfs
	// in the sandbox's mount namespace (an unprivileged worker's disk
	// quota), /proc/self/fd/<fd>/. of the descriptor the worker holds on
	// it (disk_quota.go). Not called when the command never ran.
	Finished func(home string)
	// HomeReady, when set, is called once the run's home holds the
	// task's files and before the command runs (every mode, cold or warm,
	// templates included), with the home as the command will see it
	// (HomeView): a caller that serves the home while the command runs
	// opens it there, never at a path the command reports. Its error
	// fails the run's setup (a *SetupError, step "home ready"); the
	// command never runs.
	HomeReady func(HomeView) error
}

// TimeoutKind names the limit that ended a run.
type TimeoutKind string

// Timeout kinds: the wall-clock limit (Limits.Wall), or the CPU-time limit
// (Limits.CPU) of the command.
const (
	TimeoutWall TimeoutKind = "wall"
	TimeoutCPU  TimeoutKind = "cpu"
)

// Limits bound one run. Zero means the runner's default (Config.Defaults).
type Limits struct {
	Wall      time.Duration // whole tree killed when the command has run this long (from its exec; the setup has its own bound); Result.TimedOut
	CPU       time.Duration // RLIMIT_CPU; when not set, the default or Wall, whichever is larger
	Memory    int64         // bytes: the run's cgroup memory where available, else RLIMIT_AS (set just before execve)
	Processes int64         // RLIMIT_NPROC (per uid) and, where available, pids cgroup
	FileSize  int64         // RLIMIT_FSIZE; when not set and the home has a Disk limit, that limit
	OpenFiles int64         // RLIMIT_NOFILE
	TmpSize   int64         // size of the private /tmp and /dev/shm (namespace mode without a disk limit or Spec.TmpInHome; with either they are part of the home)
	// Disk bounds the home (scratch directory, TMPDIR included) with a
	// size-capped tmpfs: writes past it fail with ENOSPC and
	// Result.DiskFull is set (disk_quota.go). Zero (after defaults) or
	// negative: unbounded (the home shares the host's disk). With
	// Spec.Scratch no tmpfs bounds the home: the limit reaches only the
	// worker's own writes into it through HomeView.Quota, by count.
	Disk int64
}

// Result is how a run ended. A run that started always yields a Result; a
// run that could not start yields an error (a *SetupError) instead.
type Result struct {
	ExitCode int    // -1 when ended by a signal
	Signal   string // e.g. "SIGKILL"; empty on a normal exit
	TimedOut bool   // the wall limit or the CPU limit ended it (Timeout says which)
	// Timeout is the limit that ended the run: TimeoutWall, TimeoutCPU, or
	// empty when none did.
	Timeout TimeoutKind
	// ExecError is set when the command could not be executed (not found:
	// ExitCode 127; not executable, bad format, argument list too long:
	// 126): the task's failure, not a setup error. Its message is also
	// written to Spec.Stderr.
	ExecError *ExecError
	// OOMKills is how many processes of the run the kernel's OOM killer
	// killed for the run's memory limit, the command's children included,
	// read from the run's cgroup (v1 memory.oom_control oom_kill, v2
	// memory.events oom_kill). Without a cgroup (ResourceLimits "rlimits
	// only") it is 0: RLIMIT_AS makes allocations fail instead of killing,
	// and a host-wide OOM kill is not attributed to the run.
	OOMKills int
	Wall     time.Duration
	CPU      time.Duration // user + system of the whole tree
	// PeakMemory is the largest resident set of any process of the run, in
	// bytes (getrusage RUSAGE_CHILDREN maxrss).
	PeakMemory int64
	// InForce names the isolation layers that were actually applied: a
	// Layers' String, "namespace", "namespace+landlock+seccomp",
	// "landlock+seccomp" or "none (insecure)".
	InForce string
	// DiskFull: the home's disk limit (Limits.Disk) was reached; the
	// task's writes past it failed with ENOSPC (read from the home's
	// tmpfs before teardown, wherever it is mounted). False for an
	// unbounded home.
	DiskFull bool
	// ResourceLimits says how memory and process limits were enforced:
	// "cgroup v1 (memory, pids)", "cgroup v2 (memory, pids)", or
	// "rlimits only (<why>)" when the host offers no usable cgroup.
	ResourceLimits string
}
