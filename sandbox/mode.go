package sandbox

import (
	"os"
	"syscall"
)

// mode is what differs between the isolated modes, namespace
// (mode_namespace.go) and Landlock (mode_landlock_linux.go). Everything
// else of a run, cold or warm, is the one skeleton in run.go: identity,
// home, cgroup, launch, layers in force, teardown. Isolation none
// (mode_none.go) runs no sandbox init, and auto (runAuto, run.go) chooses
// between the two isolated modes; both are dispatched by Runner.Run.
//
// A new per-run input (a limit, say) flows from the Spec through
// mode.prepare (what the init builds before the task: the view) or
// mode.task (the task phase: rlimits, policy), and through
// cgroup.Group.SetLimits for what the cgroup enforces. The disk limit is
// the home's, so acquire bounds the home (disk_quota.go) and the mode
// says only what differs: unprivilegedQuota and its view in prepare.
type mode interface {
	// isolation names the mode (logs, cgroup names). A mode value is
	// comparable: it keys the warm pool.
	isolation() Isolation
	// validate refuses, before anything is acquired, a spec this mode
	// cannot run, or a host it cannot run on.
	validate(r *Runner, spec Spec) error
	// warmKey is what a warm sandbox of this mode for spec depends on.
	warmKey(spec Spec) warmKey
	// unprivilegedQuota is where an unprivileged worker's runs of this
	// mode get the tmpfs bounding their home (Limits.Disk), or why they
	// cannot have one (disk_quota.go; a root worker mounts it on the host
	// in every mode).
	unprivilegedQuota() (diskQuota, error)
	// prepare makes what the mode needs in b's home and says how the init
	// is started and what view it builds, from the view-shaping fields of
	// spec (ReadOnly, Hide, Network, UnixSockets, TmpInHome,
	// Limits.TmpSize) and how b's home is bounded (b.home.quota).
	prepare(r *Runner, b *box, spec Spec) (launchPlan, error)
	// task is the init's task phase for spec in b, and the layers the run
	// then has in force; an error (a policy it cannot build) fails the run
	// before its init gets a task.
	task(r *Runner, spec Spec, b *box) (*initConfig, Layers, error)
	// killTree kills every process of a run in b, once and without
	// waiting (it is called again while the run's end is not reported);
	// nil kills the init, which takes its pid namespace with it.
	killTree(r *Runner, b *box) func(*os.Process)
	// hostRefused types a failed cold launch as ErrUnavailable when it
	// shows the host refusing the mode itself (auto then falls back).
	hostRefused(err error) error
	// templated says whether the mode's warm sandboxes are templates,
	// reused task after task (template.go), when their tasks carry the
	// seccomp layer (it refuses the keyring calls whose state a template's
	// user namespace would otherwise keep from one task to the next).
	templated() bool
	// teardown gives back what b holds (sweep, home, cgroup) and returns
	// its uid to the pool once nothing of the run is left.
	teardown(r *Runner, b *box) error
}

// launchPlan is how a mode starts its init: clone attributes (namespaces,
// id maps, credentials) and the view the init builds (nil: none).
type launchPlan struct {
	attr *syscall.SysProcAttr
	view *nsConfig
}

// isolatedModes are the modes with a sandbox init, by name.
var isolatedModes = map[Isolation]mode{
	IsolationNamespace: namespaceMode{},
	IsolationLandlock:  landlockMode{},
}
