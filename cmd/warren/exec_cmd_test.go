package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func TestExecCommandStreamsAndExitsWithCode(t *testing.T) {
	e := newCLIEnv(t)
	e.fakeWorker(t)
	tests := []struct {
		name     string
		args     []string
		wantOut  string
		wantCode int
	}{
		{"success", []string{"exec", "--", "true"}, "true\n", 0},
		{"without separator", []string{"exec", "--isolation", "none", "ls", "-la"}, "ls -la\n", 1},
		// The fake worker exits with len(argv)-1.
		{"exit code passes through", []string{"exec", "--timeout", "5s", "--", "sh", "-c", "exit 2"}, "sh -c exit 2\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.run(t, "", tt.args...)
			require.Equal(t, tt.wantOut, r.stdout)
			if tt.wantCode == 0 {
				require.NoError(t, r.err, r.stderr)
				return
			}
			var ec *exitCodeError
			require.True(t, errors.As(r.err, &ec), "%v", r.err)
			require.Equal(t, tt.wantCode, ec.Code)
		})
	}
}

func TestExecExitMapping(t *testing.T) {
	tests := []struct {
		name string
		r    messages.Result
		code int
		msg  string
	}{
		{"ok", messages.Result{Status: messages.StatusOK}, 0, ""},
		{"failed", messages.Result{Status: messages.StatusFailed, ExitCode: 3}, 3, ""},
		{"failed out of range", messages.Result{Status: messages.StatusFailed, ExitCode: 300}, 1, "exit code 300"},
		{"killed", messages.Result{Status: messages.StatusKilled, ExitCode: -1, Signal: "SIGKILL", Host: "h1"}, 137, "killed by SIGKILL on h1"},
		{"killed by TERM", messages.Result{Status: messages.StatusKilled, ExitCode: -1, Signal: "SIGTERM"}, 143, "SIGTERM"},
		{"timed out", messages.Result{Status: messages.StatusTimedOut, WallMS: 1500}, 124, "timed out after 1.5s"},
		{"cancelled", messages.Result{Status: messages.StatusCancelled}, 130, "cancelled"},
		{"invalid", messages.Result{Status: messages.StatusInvalid, Error: &messages.Error{Code: messages.CodeNULByte, Msg: "x"}}, 2, "nul_byte"},
		{"infra", messages.Result{Status: messages.StatusInfraError}, 125, "could not run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := execExit(&tt.r)
			require.Equal(t, tt.code, code)
			if tt.msg == "" {
				require.Empty(t, msg)
			} else {
				require.Contains(t, msg, tt.msg)
			}
		})
	}
}
