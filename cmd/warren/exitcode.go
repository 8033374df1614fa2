package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// Exit statuses of warren commands (docs/scheduler.md lists them).
//
// `submit --wait`, `replay --wait` and `results`:
//
//	0    every task of the attempt has a result, and none ended
//	     infra_error or cancelled (failed, timed_out, killed and invalid
//	     are the tasks' own outcomes, written in the results)
//	1    the command could not do its job: bad input, unknown batch,
//	     broker unavailable for --retry-for, ...
//	3    every task has a result, but some ended infra_error or cancelled
//	     (they did not run to an outcome of their own)
//	4    not every task has a result: --no-wait, or a batch without a
//	     manifest, whose total is unknown
//	130  interrupted; `warren results BATCH` resumes
//
// `exec` exits with the command's own status, or one of the exit* codes
// below for outcomes that are not a plain exit, following timeout(1) and
// the shells. `cancel` exits 1 for an unknown batch or task.
const (
	exitError      = 1
	exitNotRun     = 3
	exitIncomplete = 4

	exitTimedOut  = 124
	exitInfra     = 125
	exitInvalid   = 2
	exitCancelled = 130
)

// exitCodeError makes the process exit with Code without printing an error:
// the command already said what happened (or Code is a child's exit status
// passed through).
type exitCodeError struct {
	Code int
}

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// collectExit says, on w, how a collection fell short, and returns the
// exit status it earns (see above); nil when it is 0.
func collectExit(rep *scheduler.CollectReport, w io.Writer) error {
	var notRun []string
	for _, s := range []messages.Status{messages.StatusInfraError, messages.StatusCancelled} {
		if n := rep.Counts[s]; n > 0 {
			notRun = append(notRun, fmt.Sprintf("%s %d", s, n))
		}
	}
	switch {
	case rep.NoManifest:
		fmt.Fprintf(w, "warren: batch %s has no manifest (published without `warren submit`): %d result(s) of attempt %d stored now; the total is unknown\n", rep.Batch, rep.Received, rep.Attempt)
	case !rep.Complete():
		fmt.Fprintf(w, "warren: batch %s attempt %d: %d of %d results so far\n", rep.Batch, rep.Attempt, rep.Received, rep.Total)
	}
	if len(notRun) > 0 {
		fmt.Fprintf(w, "warren: batch %s attempt %d: %d task(s) did not run to an outcome (%s); `warren replay %s` runs them again\n",
			rep.Batch, rep.Attempt, rep.Counts[messages.StatusInfraError]+rep.Counts[messages.StatusCancelled], strings.Join(notRun, ", "), rep.Batch)
		return &exitCodeError{Code: exitNotRun}
	}
	if rep.NoManifest || !rep.Complete() {
		return &exitCodeError{Code: exitIncomplete}
	}
	return nil
}
