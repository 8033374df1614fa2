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

// TestUIDRangeOutsideTheMapIsRefused: an explicit range the container does
// not map fails New with the map and the fix, instead of failing each run.
func TestUIDRangeOutsideTheMapIsRefused(t *testing.T) {
	uids, err := parseIDMap("         0     100000      65536\n")
	require.NoError(t, err)
	uids.Path = uidMapPath
	_, err = chooseUIDRange(uids, uids, DefaultUIDBase, 0, nil)
	require.ErrorIs(t, err, ErrUIDRangeUnmapped)
	for _, want := range []string{`/proc/self/uid_map "0 100000 65536"`, "--uid-base/--uid-count", "automatic choice (here: 64510..65533)"} {
		require.Contains(t, err.Error(), want)
	}
}

func TestChooseUIDRange(t *testing.T) {
	full := "0 0 4294967295"
	tests := []struct {
		name        string
		uids, gids  string
		base, count uint32
		taken       []uint64
		want        uidRangeChoice
		err         string
	}{
		{name: "host: the default range", uids: full, gids: full, want: uidRangeChoice{DefaultUIDBase, DefaultUIDCount}},
		{name: "host: explicit", uids: full, gids: full, base: 5000, count: 10, want: uidRangeChoice{5000, 10}},
		{name: "container 0..65535: the top, below 65534", uids: "0 100000 65536", gids: "0 100000 65536", want: uidRangeChoice{65534 - DefaultUIDCount, DefaultUIDCount}},
		{name: "container: count only", uids: "0 100000 65536", gids: "0 100000 65536", count: 8, want: uidRangeChoice{65526, 8}},
		{name: "container: local users are skipped", uids: "0 100000 65536", gids: "0 100000 65536", count: 8, taken: []uint64{65530}, want: uidRangeChoice{65522, 8}},
		{name: "container: explicit inside", uids: "0 100000 65536", gids: "0 100000 65536", base: 2000, count: 100, want: uidRangeChoice{2000, 100}},
		{name: "container: explicit outside", uids: "0 100000 65536", gids: "0 100000 65536", base: 65000, count: 1000, err: "uids 65000..65999 ("},
		{name: "gid map narrower", uids: "0 100000 65536", gids: "0 100000 5000", want: uidRangeChoice{5000 - DefaultUIDCount, DefaultUIDCount}},
		{name: "two extents: the higher", uids: "0 100000 3000\n40000 200000 2000", gids: full, want: uidRangeChoice{42000 - DefaultUIDCount, DefaultUIDCount}},
		{name: "short map: what there is", uids: "0 100000 1100", gids: "0 100000 1100", want: uidRangeChoice{1000, 100}},
		{name: "short map, count asked", uids: "0 100000 1100", gids: "0 100000 1100", count: 200, err: "no run of 200 free ids"},
		{name: "root only", uids: "0 1000 1", gids: "0 1000 1", err: "no run of 1024 free ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := parseIDMap(tt.uids)
			require.NoError(t, err)
			g, err := parseIDMap(tt.gids)
			require.NoError(t, err)
			got, err := chooseUIDRange(u, g, tt.base, tt.count, tt.taken)
			if tt.err != "" {
				require.ErrorIs(t, err, ErrUIDRangeUnmapped)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// FuzzParseIDMap: any input parses or errors without panicking, and a
// range chosen from a parsed map is mapped in it.
func FuzzParseIDMap(f *testing.F) {
	for _, s := range []string{"0 0 4294967295\n", "         0     100000      65536\n", "0 1000 1\n1 100000 65536\n", "x", "0 0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseIDMap(s)
		if err != nil {
			return
		}
		c, err := chooseUIDRange(m, m, 0, 0, nil)
		if err != nil {
			require.ErrorIs(t, err, ErrUIDRangeUnmapped)
			return
		}
		require.NotZero(t, c.count)
		require.True(t, m.covers(uint64(c.base), uint64(c.count)), "%+v not in %s", c, m)
		require.GreaterOrEqual(t, c.base, uint32(autoUIDMin))
	})
}
