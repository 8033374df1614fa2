package scheduler

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrBatchConflict: the batch id is already used by a different set of tasks.
	ErrBatchConflict = errors.New("scheduler: batch already exists with different tasks")
	// ErrUnknownBatch: no manifest for the batch (or attempt), so the number
	// of results to wait for is unknown.
	ErrUnknownBatch = errors.New("scheduler: unknown batch")
	// ErrEmptyBatch: nothing to publish or replay.
	ErrEmptyBatch = errors.New("scheduler: empty batch")
)

// LineError is a problem with one task of a batch. Line is the 1-based line
// of a JSONL input, or the 1-based position in a slice of tasks.
type LineError struct {
	Line int
	Err  error // usually a *messages.Error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// BatchError refuses a whole batch: nothing was published. It lists every
// problem found, up to a cap.
type BatchError struct {
	Errors []*LineError
	// More counts problems found past the cap and not listed.
	More int
}

func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch refused, nothing published: %d invalid task(s)", len(e.Errors)+e.More)
	for _, le := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(le.Error())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more", e.More)
	}
	return b.String()
}

// Unwrap exposes every line error to errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, le := range e.Errors {
		errs[i] = le
	}
	return errs
}
