package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// containerHelper runs, as root of a user namespace mapping only ids
// 0..65535 (sandboxtest.RunInMappedContainer), one sandbox per isolation
// mode with the default configuration, and prints for each
// "RESULT <mode> <uid> <gid> <in force>" or "ERROR <mode> <error>".
func containerHelper() int {
	for _, iso := range []Isolation{IsolationNamespace, IsolationLandlock, IsolationAuto} {
		r, err := startedNew(Config{Isolation: iso, InitPath: os.Getenv(testInitEnv)})
		if err != nil {
			fmt.Printf("ERROR %s %v\n", iso, err)
			continue
		}
		var out bytes.Buffer
		res, err := r.Run(context.Background(), Spec{Argv: []string{"/bin/sh", "-c", "echo $(id -u) $(id -g)"}, Stdout: &out, Stderr: &out, Limits: Limits{Wall: time.Minute}})
		_ = r.Close()
		if err != nil {
			fmt.Printf("ERROR %s %v\n", iso, err)
			continue
		}
		fmt.Printf("RESULT %s %s %s\n", iso, strings.TrimSpace(out.String()), res.InForce)
	}
	return 0
}

// TestRootInAContainerMapping0To65535 is root in a user namespace that
// maps only ids 0..65535 (a container of Hugging Face's pool hosts): the
// default uid range 1900000000.. is unmapped there, so a runner keeping
// it fails every run at "chown scratch" with EINVAL. Each mode must run
// with a dedicated uid inside the mapped range, not 0.
func TestRootInAContainerMapping0To65535(t *testing.T) {
	sandboxtest.RequireUserNS(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	out, err := sandboxtest.RunInMappedContainer(t, exe, []string{helperEnv + "=container"}, "-test.run=^$")
	require.NoError(t, err, out)
	t.Log("\n" + out)
	modes := map[string]bool{}
	for l := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "RESULT" {
			continue
		}
		require.Len(t, f, 5, l)
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		require.NoError(t, err1, l)
		require.NoError(t, err2, l)
		require.NotZero(t, uid, l)
		require.Less(t, uid, sandboxtest.ContainerIDs, l)
		require.Equal(t, uid, gid, l)
		modes[f[1]] = true
	}
	require.NotContains(t, out, "ERROR", out)
	require.Equal(t, map[string]bool{"namespace": true, "landlock": true, "auto": true}, modes, out)
}
