package sandbox

import (
	"errors"
	"fmt"

	"github.com/warrenhq/warren/sandbox/internal/ident"
)

var (
	// ErrUnavailable means the requested isolation cannot be provided on this
	// host; the command was not run. `warren doctor` says why and how to fix it.
	ErrUnavailable = errors.New("sandbox: isolation unavailable on this host")
	// ErrInsecureRefused means isolation none was requested without
	// Config.AllowInsecure.
	ErrInsecureRefused = errors.New("sandbox: isolation none refused; start the worker with --insecure-no-isolation to allow it")
	// ErrInvalidSpec means the spec itself is unusable (empty argv, bad path).
	ErrInvalidSpec = errors.New("sandbox: invalid spec")
	// ErrUIDPoolExhausted means every uid of the configured range is in use or
	// quarantined; the command was not run.
	ErrUIDPoolExhausted = ident.ErrPoolExhausted
	// ErrUIDRangeUnmapped means the sandbox uid range of a root worker is not
	// (entirely) mapped in the worker's user namespace, so no file can be
	// given to those ids (chown fails with EINVAL) and no process can run as
	// them. The error names the map and the fix.
	ErrUIDRangeUnmapped = ident.ErrRangeUnmapped
)

// SetupError reports a failed setup step. The command never ran.
type SetupError struct {
	Step string // e.g. "pivot_root", "mount /proc", "landlock restrict_self"
	Path string // the path involved, if any
	Err  error
}

func (e *SetupError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("sandbox setup failed at %s (%s): %v", e.Step, e.Path, e.Err)
	}
	return fmt.Sprintf("sandbox setup failed at %s: %v", e.Step, e.Err)
}

func (e *SetupError) Unwrap() error { return e.Err }
