package ident

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUIDRangeOutsideTheMapIsRefused: an explicit range the container does
// not map fails New with the map and the fix, instead of failing each run.
func TestUIDRangeOutsideTheMapIsRefused(t *testing.T) {
	uids, err := ParseMap("         0     100000      65536\n")
	require.NoError(t, err)
	uids.Path = UIDMapPath
	_, err = ChooseRange(uids, uids, DefaultBase, 0, nil)
	require.ErrorIs(t, err, ErrRangeUnmapped)
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
		want        Range
		err         string
	}{
		{name: "host: the default range", uids: full, gids: full, want: Range{DefaultBase, DefaultCount}},
		{name: "host: explicit", uids: full, gids: full, base: 5000, count: 10, want: Range{5000, 10}},
		{name: "container 0..65535: the top, below 65534", uids: "0 100000 65536", gids: "0 100000 65536", want: Range{65534 - DefaultCount, DefaultCount}},
		{name: "container: count only", uids: "0 100000 65536", gids: "0 100000 65536", count: 8, want: Range{65526, 8}},
		{name: "container: local users are skipped", uids: "0 100000 65536", gids: "0 100000 65536", count: 8, taken: []uint64{65530}, want: Range{65522, 8}},
		{name: "container: explicit inside", uids: "0 100000 65536", gids: "0 100000 65536", base: 2000, count: 100, want: Range{2000, 100}},
		{name: "container: explicit outside", uids: "0 100000 65536", gids: "0 100000 65536", base: 65000, count: 1000, err: "uids 65000..65999 ("},
		{name: "gid map narrower", uids: "0 100000 65536", gids: "0 100000 5000", want: Range{5000 - DefaultCount, DefaultCount}},
		{name: "two extents: the higher", uids: "0 100000 3000\n40000 200000 2000", gids: full, want: Range{42000 - DefaultCount, DefaultCount}},
		{name: "short map: what there is", uids: "0 100000 1100", gids: "0 100000 1100", want: Range{1000, 100}},
		{name: "short map, count asked", uids: "0 100000 1100", gids: "0 100000 1100", count: 200, err: "no run of 200 free ids"},
		{name: "root only", uids: "0 1000 1", gids: "0 1000 1", err: "no run of 1024 free ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ParseMap(tt.uids)
			require.NoError(t, err)
			g, err := ParseMap(tt.gids)
			require.NoError(t, err)
			got, err := ChooseRange(u, g, tt.base, tt.count, tt.taken)
			if tt.err != "" {
				require.ErrorIs(t, err, ErrRangeUnmapped)
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
		m, err := ParseMap(s)
		if err != nil {
			return
		}
		c, err := ChooseRange(m, m, 0, 0, nil)
		if err != nil {
			require.ErrorIs(t, err, ErrRangeUnmapped)
			return
		}
		require.NotZero(t, c.Count)
		require.True(t, m.Covers(uint64(c.Base), uint64(c.Count)), "%+v not in %s", c, m)
		require.GreaterOrEqual(t, c.Base, uint32(autoMin))
	})
}
