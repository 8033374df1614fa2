package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// presizeStack grows the goroutine's stack (its frame is on the stack,
// not moved to the heap): the runtime's stack spans grow by at least the
// 128 KiB stack it sizes. Measured in a process of its own: in the
// package's run other tests' goroutines free stacks meanwhile.
func TestPresizeStackGrowsTheStackOnce(t *testing.T) {
	const child = "WARREN_TEST_PRESIZE_CHILD"
	if os.Getenv(child) != "" {
		inuse := func() uint64 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.StackInuse
		}
		grew := make(chan uint64)
		go func() { // a fresh goroutine: its stack starts small
			before := inuse()
			presizeStack()
			grew <- inuse() - before
		}()
		fmt.Printf("grew %d\n", <-grew)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPresizeStackGrowsTheStackOnce$", "-test.count=1")
	cmd.Env = append(os.Environ(), child+"=1", "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var grew uint64
	for _, line := range strings.Split(string(out), "\n") {
		if n, ok := strings.CutPrefix(line, "grew "); ok {
			grew, err = strconv.ParseUint(n, 10, 64)
			require.NoError(t, err)
		}
	}
	require.GreaterOrEqual(t, grew, uint64(128<<10), "presizeStack did not grow the goroutine's stack: %s", out)
}
