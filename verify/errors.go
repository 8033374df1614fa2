package verify

import (
	"errors"
	"fmt"
)

// ErrUnknownKind means a profile's kind has no checker.
var ErrUnknownKind = errors.New("verify: profile kind has no checker")

// ProfileError is a problem in a profile file; Field names the setting.
type ProfileError struct {
	Field string
	Msg   string
}

func (e *ProfileError) Error() string {
	if e.Field == "" {
		return "profile: " + e.Msg
	}
	return fmt.Sprintf("profile: %s: %s", e.Field, e.Msg)
}

func asProfileError(err error, target **ProfileError) bool { return errors.As(err, target) }

// StatementError means the task's expected statement (or header) does not
// elaborate on its own, in a clean context: the task is invalid, no verdict
// about the proof can be given. The worker should report the task invalid.
type StatementError struct {
	Msg string // the checker's output
}

func (e *StatementError) Error() string {
	return "verify: the expected statement does not elaborate in a clean context: " + e.Msg
}

// InfraError means a check step could not be run (sandbox refused, scratch
// unusable); the task may be retried elsewhere.
type InfraError struct {
	Step string
	Err  error
}

func (e *InfraError) Error() string { return fmt.Sprintf("verify: %s: %v", e.Step, e.Err) }

func (e *InfraError) Unwrap() error { return e.Err }
