package sandbox

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// ExecError means the sandbox was set up but the command itself could not
// be executed: not found (exit 127), not executable, not a valid
// executable, or an argument list the kernel refuses (exit 126). It is the
// task's failure, as a shell reports it, never a setup error: Run returns
// a Result with ExitCode 127 or 126 and this in Result.ExecError, and
// writes its message to Spec.Stderr.
type ExecError struct {
	Command string        // Argv[0] as given
	Errno   syscall.Errno // execve's error, or ENOENT/EACCES from the PATH lookup
}

func (e *ExecError) Error() string {
	if e.Errno == unix.ENOENT && !strings.Contains(e.Command, "/") {
		return fmt.Sprintf("%s: command not found", e.Command)
	}
	return fmt.Sprintf("%s: cannot execute: %s", e.Command, e.Errno.Error())
}

// ExitCode is the exit status the run reports: 127 for a command not
// found, 126 otherwise.
func (e *ExecError) ExitCode() int { return initproc.ExecExitCode(e.Errno) }

func (e *ExecError) Unwrap() error { return e.Errno }

// notExecuted is the Result of a run whose command could not be executed.
func notExecuted(command string, errno syscall.Errno, inForce string) *Result {
	ee := &ExecError{Command: command, Errno: errno}
	return &Result{ExitCode: ee.ExitCode(), ExecError: ee, InForce: inForce}
}

// isExecErrno reports whether errno is one execve returns for the program
// itself (as opposed to a fork that failed for want of resources).
func isExecErrno(errno syscall.Errno) bool {
	switch errno {
	case unix.ENOENT, unix.EACCES, unix.ENOEXEC, unix.E2BIG, unix.ENOTDIR, unix.ELOOP,
		unix.ENAMETOOLONG, unix.ETXTBSY, unix.EISDIR, unix.ELIBBAD:
		return true
	}
	return false
}
