package sandbox

import (
	"errors"
	"strings"

	"github.com/warrenhq/warren/sandbox/internal/ident"
	"golang.org/x/sys/unix"
)

// uidRangeFix is the fix for a sandbox uid range outside the id maps.
const uidRangeFix = "pass --uid-base/--uid-count (Config.UIDBase/UIDCount) inside the ids /proc/self/uid_map and gid_map map, or leave them unset for the automatic choice; or map more ids into the worker's user namespace"

// setupFix names the most likely cause of a failed probe sandbox, in any
// mode, when it is not the host refusing namespaces.
func setupFix(err error) string {
	var se *SetupError
	switch {
	case errors.Is(err, ErrUIDRangeUnmapped):
		return uidRangeFix
	case errors.Is(err, ErrDiskQuotaUnavailable):
		return "run the worker as root or in namespace mode, or give it (and doctor) --disk unbounded: Landlock-only sandboxes of an ordinary user then share the host's disk"

	case errors.Is(err, ErrScratchRootNotPrivate):
		return "the default scratch root is not this user's own: remove it (as its owner), or pass --scratch-root"
	case errors.As(err, &se) && strings.HasPrefix(se.Step, "chown") && errors.Is(err, unix.EINVAL):
		m, _ := ident.ReadMap(ident.UIDMapPath)
		return "the sandbox uid is not mapped in this user namespace (" + m.String() + "): " + uidRangeFix
	case errors.As(err, &se) && errors.Is(err, unix.EACCES):
		return "the sandbox uid cannot reach a path it needs (" + se.Path + "): make the scratch root and toolchain paths and their parents world-searchable (o+x)"
	}
	return ""
}
