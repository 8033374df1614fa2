package messages

import (
	"slices"
	"strconv"
)

// Limits of what execve accepts, checked by validation so that a command
// the kernel would refuse (E2BIG) is an invalid task, not an
// infrastructure failure on every delivery.
const (
	// MaxArgStrlen is the kernel's MAX_ARG_STRLEN: one argument or
	// environment string ("NAME=value"), its terminating NUL included, is
	// at most 32 pages (128 KiB). A shell task's script is one argument
	// of /bin/sh -c.
	MaxArgStrlen = 128 << 10
	// MaxExecBytes bounds argv and env together as the kernel counts them
	// against ARG_MAX: every string with its NUL plus an 8-byte pointer.
	// The kernel allows a quarter of the stack rlimit (2 MiB at the usual
	// 8 MiB); 1 MiB stays valid down to a 4 MiB stack and leaves room for
	// the variables the sandbox adds.
	MaxExecBytes = 1 << 20
)

// validateExecSize refuses an exec task whose argv or env the kernel would
// refuse to exec, naming the offending string.
func (t *Task) validateExecSize() error {
	if t.Kind != KindExec {
		return nil
	}
	total := 0
	for i, a := range t.Command() {
		if len(a)+1 > MaxArgStrlen {
			field := "argv[" + strconv.Itoa(i) + "]"
			if t.Shell != "" {
				field = "shell" // the script of /bin/sh -c
			}
			return fieldErr(CodeTooLarge, field, "%d bytes; the kernel takes at most %d per argument (MAX_ARG_STRLEN, NUL included): pass large data in files or stdin", len(a), MaxArgStrlen-1)
		}
		total += len(a) + 1 + 8
	}
	names := make([]string, 0, len(t.Env))
	for k := range t.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		n := len(k) + 1 + len(t.Env[k]) + 1
		if n > MaxArgStrlen {
			return fieldErr(CodeTooLarge, "env."+k, "NAME=value is %d bytes; the kernel takes at most %d per variable (MAX_ARG_STRLEN, NUL included): pass large data in files or stdin", n-1, MaxArgStrlen-1)
		}
		total += n + 8
	}
	if total > MaxExecBytes {
		return fieldErr(CodeTooLarge, "argv", "argv and env take %d bytes as exec counts them (strings, NULs and pointers), at most %d: pass large data in files or stdin", total, MaxExecBytes)
	}
	return nil
}
