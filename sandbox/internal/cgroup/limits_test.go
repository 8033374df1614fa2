package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCgroupV1BoundsSwapToo: a v1 run cgroup limits memory+swap to the
// memory limit (where swap is accounted), through a raise and a lowering
// of the limit (a warm sandbox's cgroup gets the task's limit late).
func TestCgroupV1BoundsSwapToo(t *testing.T) {
	cs := Detect()
	if cs.Version != 1 {
		t.Skipf("no usable cgroup v1 here (%s)", cs)
	}
	cg, err := cs.Create(fmt.Sprintf("warren-swaptest-%d", os.Getpid()), 64<<20, 16)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cg.Remove()) })
	memsw := filepath.Join(cg.dirs["memory"], "memory.memsw.limit_in_bytes")
	if _, err := os.Stat(memsw); err != nil {
		t.Skipf("no swap accounting on this host: %v", err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(cg.dirs["memory"], name))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	for _, limit := range []int64{64 << 20, 512 << 20, 32 << 20} {
		require.NoError(t, cg.SetLimits(limit, 16))
		require.Equal(t, fmt.Sprint(limit), read("memory.limit_in_bytes"))
		require.Equal(t, fmt.Sprint(limit), read("memory.memsw.limit_in_bytes"), "swap bounded by the same limit")
	}
}
