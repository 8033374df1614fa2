package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsageCgroupStat reads the stat files of both cgroup versions: only
// anonymous, shmem and swap memory count, not page cache or mapped files.
func TestUsageCgroupStat(t *testing.T) {
	tests := []struct {
		name    string
		version int
		files   map[string]string
		want    int64
	}{
		{"v1", 1, map[string]string{"memory.stat": "cache 1000\nrss 7\nshmem 9\nmapped_file 500\ntotal_cache 4000\ntotal_rss 100\ntotal_shmem 20\ntotal_mapped_file 3000\ntotal_swap 3\n"}, 123},
		{"v1 without swap accounting", 1, map[string]string{"memory.stat": "total_rss 100\ntotal_shmem 20\ntotal_cache 9\n"}, 120},
		{"v2", 2, map[string]string{"memory.stat": "anon 100\nfile 4000\nkernel 70\nshmem 20\nfile_mapped 3000\n", "memory.swap.current": "3\n"}, 123},
		{"v2 without swap", 2, map[string]string{"memory.stat": "anon 100\nfile 4000\nshmem 20\n"}, 120},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
			}
			cg := &Group{version: tc.version, dirs: map[string]string{"memory": dir, "": dir}}
			n, err := cg.Memory()
			require.NoError(t, err)
			require.Equal(t, tc.want, n)
		})
	}
	cg := &Group{version: 1, dirs: map[string]string{"memory": t.TempDir()}}
	_, err := cg.Memory()
	require.ErrorIs(t, err, os.ErrNotExist, "a missing stat file is an error, not 0")
}
