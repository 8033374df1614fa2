package sandbox

import (
	"fmt"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/warrenhq/warren/sandbox/initproc"
)

// landlockABIInfo is what the kernel says about Landlock.
type landlockABIInfo struct {
	// Kernel is the ABI the kernel reports (0: Landlock missing or disabled).
	Kernel int
	// Errata is the bitmask of fixed errata (LANDLOCK_CREATE_RULESET_ERRATA).
	Errata int
	// Effective is the ABI warren relies on: Kernel, lowered to 5 when ABI 6
	// lacks the signal-scoping fix (erratum 2), as go-landlock does.
	Effective int
	// Err is why the ABI query failed, if it did.
	Err error
}

// landlockABI queries the running kernel. It is cheap (two syscalls).
func landlockABI() landlockABIInfo {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return landlockABIInfo{Err: fmt.Errorf("landlock is not supported by the kernel or not enabled at boot (lsm=): %w", err)}
	}
	errata, err := ll.LandlockGetErrata()
	if err != nil {
		errata = 0 // pretend none is fixed
	}
	return landlockABIFrom(v, errata)
}

// landlockABIFrom derives the effective ABI from what the kernel reports.
func landlockABIFrom(v, errata int) landlockABIInfo {
	return landlockABIInfo{Kernel: v, Effective: initproc.EffectiveABI(v, errata), Errata: errata}
}

// require returns an error wrapping ErrUnavailable when the effective ABI is
// below minABI, naming what is missing and how to lower the floor.
func (a landlockABIInfo) require(minABI int) error {
	if minABI < 1 {
		minABI = landlockMinABIDefault
	}
	if a.Effective >= minABI {
		return nil
	}
	var missing []string
	for v := a.Effective + 1; v <= minABI && v < len(landlockABIFeatures); v++ {
		missing = append(missing, landlockABIFeatures[v])
	}
	why := ""
	if a.Err != nil {
		why = ": " + a.Err.Error()
	} else if a.Kernel != a.Effective {
		why = fmt.Sprintf(" (kernel reports %d but lacks the signal-scoping fix, erratum 2)", a.Kernel)
	}
	return fmt.Errorf("%w: Landlock ABI %d is below the required %d%s; missing: %s. "+
		"Upgrade the kernel, or lower the floor explicitly with Config.LandlockMinABI, "+
		"accepting that those protections will be absent",
		ErrUnavailable, a.Effective, minABI, why, strings.Join(missing, ", "))
}

// landlockABIFeatures names what each ABI adds, for messages and doctor.
var landlockABIFeatures = []string{
	0:  "none",
	1:  "fs",
	2:  "refer",
	3:  "truncate",
	4:  "tcp_bind_connect",
	5:  "ioctl_dev",
	6:  "scope_abstract_unix_socket_and_signal",
	7:  "audit_logging",
	8:  "tsync",
	9:  "fs_resolve_unix",
	10: "udp_bind_connect",
	11: "restrict_self_no_new_privs",
}
