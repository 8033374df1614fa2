package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// HopperEnv names a prebuilt sandbox/sandboxtest/hopper (mk/sandbox.mk
// sets it for the unprivileged run, which has no writable Go cache).
const HopperEnv = "WARREN_SANDBOX_TEST_HOPPER"

var hopper = struct {
	once sync.Once
	path string
	err  error
	out  []byte
}{}

// Hopper is the path of the hopper fixture (a process that changes its
// pid without end: see package main in ./hopper), built once per test
// process into a directory every user can read, unless HopperEnv names
// one. Its content, for Spec.Files, is os.ReadFile(Hopper(t)).
//
// Run it only where something kills every process of a uid, a pid
// namespace or a cgroup at once: on the host, no kill by pid, group or
// session reliably catches it.
func Hopper(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(HopperEnv); p != "" {
		return p
	}
	hopper.once.Do(func() {
		dir, err := os.MkdirTemp("", "warren-hopper-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			hopper.err = err
			return
		}
		hopper.path = filepath.Join(dir, "hopper")
		cmd := exec.Command("go", "build", "-o", hopper.path, "github.com/warrenhq/warren/sandbox/sandboxtest/hopper")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		hopper.out, hopper.err = cmd.CombinedOutput()
	})
	if hopper.err != nil {
		t.Fatalf("building the hopper: %v: %s", hopper.err, hopper.out)
	}
	return hopper.path
}
