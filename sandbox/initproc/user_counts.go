package initproc

import (
	"os"
	"strconv"
)

// userCounts are the per-user counters a sandbox's user namespace bounds
// (user.* sysctls, per user namespace, which start at no bound in a new
// one). The kernel charges what a sandbox takes to its own namespace and
// to every one above it, so without a bound of its own one sandbox could
// take all of the worker user's (128 inotify instances by default) and
// leave none to the other sandboxes and the host processes of that user.
// With these, N sandboxes at once take at most N times each.
var userCounts = []struct {
	name  string
	value int
}{
	{"max_inotify_instances", 16},
	{"max_inotify_watches", 8192},
	{"max_fanotify_groups", 16},
	{"max_fanotify_marks", 8192},
}

// StepUserCounts is the step that bounds the user namespace's counters.
const StepUserCounts Step = "bound user counters"

// boundUserCounts writes userCounts into dir, the sandbox's
// /proc/sys/user. A counter this kernel does not have is skipped.
func boundUserCounts(dir string) error {
	for _, c := range userCounts {
		err := os.WriteFile(dir+c.name, []byte(strconv.Itoa(c.value)), 0)
		if err != nil && !os.IsNotExist(err) {
			return fail(StepUserCounts, dir+c.name, err)
		}
	}
	return nil
}
