// Package home is the host-side mechanics of a sandbox's home (its
// scratch directory): the scratch root the homes live in, the tmpfs that
// bounds a home on the host, and reading the mount table to explain a
// bind the kernel refused. It knows nothing of runs, specs or modes:
// package sandbox decides when each applies.
//
// # Model
//
// The scratch root is one per user by default ([DefaultRoot]), made by
// [MakeRoot]: an operator's explicit root is created as needed, the
// default one must be this user's own private directory. [LegacyRoot]
// is the shared default of earlier versions, still swept. A bounded home
// is a size-capped tmpfs ([MountTmpfs], [ResizeTmpfs], [UnmountTmpfs]);
// [DiskFull] tells a task that filled it. [ExplainBind] turns the EINVAL
// of a bind whose source has mounts under it into [ErrSubmounts], naming
// them ([SubmountsOf] over [ReadMountinfo]).
//
// # Failure handling
//
// MakeRoot refuses a default root that is not private
// ([ErrRootNotPrivate]) rather than fix it up, and reports the failed
// step as a [StepError]; the tmpfs functions return the system's error as
// it is, except that unmounting a tmpfs already gone is no error.
// ExplainBind leaves every other error as it was.
//
// # Limits
//
// Linux only. Mounting a tmpfs needs CAP_SYS_ADMIN over the caller's
// mount namespace (a root worker on the host); an unprivileged worker's
// homes are bounded by the sandbox's init instead, which package sandbox
// arranges.
package home
