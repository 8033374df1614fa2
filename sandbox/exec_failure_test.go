package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestCommandThatCannotBeExecutedIsTheTasksFailure: a command not found,
// not executable or with an argument the kernel refuses is a normal Result
// (exit 127 / 126, as a shell, with ExecError and a message on stderr),
// never a SetupError, in every mode; the control runs.
func TestCommandThatCannotBeExecutedIsTheTasksFailure(t *testing.T) {
	for _, m := range append(runModes(), usageMode{"insecure", false, func(t *testing.T) (*Runner, Isolation) {
		r, err := startedNew(Config{Isolation: IsolationNone, AllowInsecure: true, ScratchRoot: t.TempDir()})
		require.NoError(t, err)
		return r, IsolationNone
	}}) {
		t.Run(m.name, func(t *testing.T) {
			r, iso := m.runner(t)
			o := modeRun(t, r, iso, Spec{Argv: []string{"/bin/echo", "ran"}})
			require.Equal(t, 0, o.res.ExitCode, "control: %s", o.stderr)
			require.Nil(t, o.res.ExecError)
			require.Equal(t, "ran\n", o.stdout)

			for _, tc := range []struct {
				name   string
				spec   Spec
				code   int
				errno  unix.Errno
				stderr string
			}{
				{"not on the PATH", Spec{Argv: []string{"no-such-command-xyz"}}, 127, unix.ENOENT, "warren: no-such-command-xyz: command not found\n"},
				{"no such path", Spec{Argv: []string{"/nonexistent/cmd"}}, 127, unix.ENOENT, "warren: /nonexistent/cmd: cannot execute: no such file or directory\n"},
				{"not executable", Spec{Argv: []string{"./script"}, Files: map[string][]byte{"script": []byte("#!/bin/sh\necho ran\n")}}, 126, unix.EACCES, "warren: ./script: cannot execute: permission denied\n"},
				{"argument over the kernel's limit", Spec{Argv: []string{"/bin/echo", strings.Repeat("a", 200<<10)}}, 126, unix.E2BIG, "warren: /bin/echo: cannot execute: argument list too long\n"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					o := modeRun(t, r, iso, tc.spec)
					require.Equal(t, tc.code, o.res.ExitCode)
					require.Empty(t, o.res.Signal)
					require.NotNil(t, o.res.ExecError)
					require.Equal(t, tc.errno, o.res.ExecError.Errno)
					require.ErrorIs(t, o.res.ExecError, tc.errno)
					require.Equal(t, tc.stderr, o.stderr)
					require.Empty(t, o.stdout, "nothing ran")
					require.False(t, o.res.TimedOut)
				})
			}
		})
	}
}
