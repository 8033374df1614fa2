package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrBatchConflict: the batch id is already used by a different set of tasks.
	ErrBatchConflict = errors.New("scheduler: batch already exists with different tasks")
	// ErrUnknownBatch: neither a manifest nor any task or result of the
	// batch (or attempt) exists.
	ErrUnknownBatch = errors.New("scheduler: unknown batch")
	// ErrUnknownTask: the batch exists but no task of it has that id.
	ErrUnknownTask = errors.New("scheduler: unknown task")
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

// BatchError refuses a whole batch: nothing was published. Errors holds
// every problem found, in line order (a line may have more than one, e.g.
// a line too large for the broker is reported once validation passed).
type BatchError struct {
	Errors []*LineError
	// Show caps the problems Error lists; WriteTo writes all of them.
	// Defaults to 20.
	Show int
}

// newBatchError sorts errs by line; nil when there are none.
func newBatchError(errs []*LineError, show int) *BatchError {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *LineError) int { return cmp.Compare(a.Line, b.Line) })
	return &BatchError{Errors: errs, Show: show}
}

func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch refused, nothing published: %d problem(s)", len(e.Errors))
	show := cmp.Or(e.Show, 20)
	for _, le := range e.Errors[:min(show, len(e.Errors))] {
		b.WriteString("\n  ")
		b.WriteString(le.Error())
	}
	if more := len(e.Errors) - show; more > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more (`warren submit --errors FILE` writes every one)", more)
	}
	return b.String()
}

// WriteTo writes every problem, one "line N: ..." per line, in line order.
func (e *BatchError) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, le := range e.Errors {
		k, err := fmt.Fprintln(w, le.Error())
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Unwrap exposes every line error to errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, le := range e.Errors {
		errs[i] = le
	}
	return errs
}
