package sandbox

import (
	"testing"
	"time"
)

func TestLLTmpProf(t *testing.T) {
	r, _ := New(Config{ScratchRoot: t.TempDir()})
	r.nsInit()
	s := time.Now()
	for range 20 {
		cg, err := r.ns.cgroups.create("x-prof", 1<<30, 100)
		if err != nil { t.Fatal(err) }
		cg.remove()
	}
	t.Log("cgroup", time.Since(s)/20, r.ns.cgroups.String())
	s = time.Now()
	for range 20 { processesOfUID(1900000000) }
	t.Log("procscan", time.Since(s)/20)
	s = time.Now()
	for range 20 { landlockABI() }
	t.Log("abi", time.Since(s)/20)
}
