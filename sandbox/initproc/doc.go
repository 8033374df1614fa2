// Package initproc is the sandbox init: the code that runs in the child
// between clone and exec of the task. Package sandbox (the worker side)
// starts it, either as the small dedicated binary cmd/warren-sandbox-init
// or as the worker's own binary re-executed (sandbox.MaybeInit), sends it
// a Config on ConfigFD and reads its status on StatusFD. The dedicated
// binary is exec'd through the init's own descriptor on it, BinaryFD.
//
// It imports only the standard library, x/sys and go-landlock, so the
// dedicated binary starts in a few milliseconds: that start is on the
// critical path of every cold sandbox. The seccomp program arrives
// assembled (Seccomp.Program); the worker builds it.
//
// # Model
//
// Main reads one Config and runs its phases in order (see Config); a warm
// sandbox (Config.Prepare) stops after building its view, reports
// StatusReady and reads a second Config, the task. Its last step
// (exec.go) makes raw system calls only, with the garbage collector off:
// the rlimits (RLIMIT_AS last, so no limit ever binds the init's own
// memory), StatusExec, execve. A task whose program cannot be executed
// (not found, not executable, E2BIG) gets a StatusExecFailed record after
// StatusExec and the init exits 127 or 126, as a shell: the task's
// failure, not a setup failure.
//
// # Failure handling
//
// Every step fails closed: the first failure is reported on StatusFD as a
// JSON Failure naming the step, the path and the errno, the init exits
// ExitSetup, and the task never runs. The worker keeps ConfigFD open for
// the run's whole life; the init treats its hang-up as the worker's death
// where it must (Landlock-only mode, after a credential change).
//
// # Limits
//
// Linux only (namespaces, pivot_root, openat2, close_range, Landlock).
// The init trusts its Config: it comes from the worker over a pipe only
// the worker holds.
package initproc
