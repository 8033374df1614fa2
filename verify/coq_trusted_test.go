package verify

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/sandbox"
)

// TestShellJoinRoundTrips: every argument reaches the program as it was,
// whatever quotes, spaces or shell syntax it holds.
func TestShellJoinRoundTrips(t *testing.T) {
	args := []string{"plain", "two words", "it's", `"dq"`, "$HOME", "`id`", "a;b|c&&d", "", "-Q", "\\back"}
	out, err := exec.Command("/bin/sh", "-c", "printf '%s\\n' "+shellJoin(args)).Output()
	require.NoError(t, err)
	require.Equal(t, strings.Join(args, "\n")+"\n", string(out))
}

// TestShellEnd: the status the shell reports for step 2 becomes the end the
// sandbox would have reported for it alone, so classifyEnd decides as
// before the fold.
func TestShellEnd(t *testing.T) {
	tests := []struct {
		rc   int
		want sandbox.Result
	}{
		{0, sandbox.Result{ExitCode: 0}},
		{1, sandbox.Result{ExitCode: 1}},
		{128, sandbox.Result{ExitCode: 128}},
		{137, sandbox.Result{ExitCode: -1, Signal: "SIGKILL"}},
		{139, sandbox.Result{ExitCode: -1, Signal: "SIGSEGV"}},
		{152, sandbox.Result{ExitCode: -1, Signal: "SIGXCPU", TimedOut: true, Timeout: sandbox.TimeoutCPU}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, *shellEnd(tt.rc), "rc %d", tt.rc)
	}
}
