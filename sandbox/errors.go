package sandbox

import (
	"errors"
	"fmt"
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
