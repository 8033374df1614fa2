package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/warrenhq/warren/sandbox/internal/cgroup"
)

// The first half of the run skeleton (run.go), shared by cold runs and
// warm sandboxes: what a sandbox holds on the host, acquired in one place
// and given back by its mode.

// box is what one sandbox holds on the host: its identity, its home (the
// scratch directory) and its cgroup. Its mode gives it back (mode.teardown).
type box struct {
	uid, gid uint32
	home     scratchDir
	held     *heldHome     // the home as its init mounted it (disk_quota.go); nil when on the host
	cg       *cgroup.Group // nil when limits are rlimits only
}

// acquire takes what a sandbox of mode m holds on the host, in order: an
// identity, a home (spec.Scratch, else a fresh directory bounded at
// limits.Disk (disk_quota.go), with spec's files in it, handed to the
// identity), what the mode prepares (hook, if set, edits the view:
// tests), then a cgroup bounded by limits. On failure everything taken is
// given back and the error names the step. A home its init bounds
// (quotaInit) is filled once the init has built it (box.hold).
func (r *Runner) acquire(m mode, spec Spec, limits Limits, hook func(*nsConfig)) (*box, launchPlan, error) {
	q, err := quotaFor(m, spec.Scratch, limits.Disk)
	if err != nil {
		return nil, launchPlan{}, err
	}
	uid, gid, err := r.acquireIdentity()
	if err != nil {
		return nil, launchPlan{}, err
	}
	b := &box{uid: uid, gid: gid}
	fail := func(err error) (*box, launchPlan, error) {
		r.giveBack(m, b)
		return nil, launchPlan{}, err
	}
	home, err := r.newScratch(spec.Scratch)
	if err != nil {
		return fail(err)
	}
	// The tmpfs first: the files go into it.
	err = home.bound(q, limits.Disk, uid, gid)
	if err == nil && q != quotaInit {
		err = home.fill(spec, uid, gid)
	}
	if err != nil {
		_ = home.cleanup()
		return fail(err)
	}
	b.home = home
	plan, err := m.prepare(r, b, spec)
	if err != nil {
		return fail(err)
	}
	if hook != nil && plan.view != nil {
		hook(plan.view)
	}
	b.cg, err = r.cgroups.Create(cgroupName(m.isolation(), b), limits.Memory, limits.Processes)
	if err != nil {
		return fail(&SetupError{Step: "create cgroup", Err: err})
	}
	return b, plan, nil
}

// giveBack tears b down (its mode's teardown), logging what failed: the
// run's outcome stands, the uid is quarantined by the teardown check.
func (r *Runner) giveBack(m mode, b *box) {
	b.held.close()
	if err := m.teardown(r, b); err != nil {
		r.log.Error().Err(err).Str("mode", string(m.isolation())).Uint32("uid", b.uid).Msg("sandbox teardown failed")
	}
}

// acquireIdentity returns the uid and gid a run executes as: a dedicated
// uid from the pool when the worker is root, else the worker's own.
func (r *Runner) acquireIdentity() (uid, gid uint32, err error) {
	if r.pool == nil {
		return uint32(os.Getuid()), uint32(os.Getgid()), nil
	}
	u, err := r.pool.Acquire()
	if err != nil {
		return 0, 0, &SetupError{Step: "acquire sandbox uid", Err: err}
	}
	return u, u, nil
}

// cgroupPrefixes start the name of a run's cgroup, per mode; the home's
// name (which carries the owner tag sweepStale reads) and the uid follow.
var cgroupPrefixes = map[Isolation]string{
	IsolationNamespace: "warren-",
	IsolationLandlock:  "ll-",
}

// cgroupSeq numbers the cgroups of runs in a caller's home (cgroupName).
var cgroupSeq atomic.Uint64

// cgroupName is the name of b's cgroup in mode iso: the one place run
// cgroups are named. It is unique on the host and carries the owner tag
// (sweepStale removes it once its worker is dead) whatever the home: a
// home the Runner made is named so already (owner tag, random suffix); a
// caller's home (Spec.Scratch, say verify's "compile") is not, so its
// run's cgroup is named after the owner and a per-process sequence number
// instead. The uid does not make a name unique: it goes back to the pool,
// where this or another worker on the host can lease it again, before
// its run's cgroup is removed.
func cgroupName(iso Isolation, b *box) string {
	home := filepath.Base(b.home.path)
	if !b.home.owned {
		home = scratchPrefix() + "c" + strconv.FormatUint(cgroupSeq.Add(1), 10)
	}
	return cgroupPrefixes[iso] + home + "-" + strconv.FormatUint(uint64(b.uid), 10)
}
