// Package sandboxtest holds helpers for tests that run sandboxes.
package sandboxtest

import (
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI (env CI=true), where every
// isolation feature must exist and a missing one is a failure.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips the test saying why, or fails it in CI: a kernel
// feature the sandbox needs is missing, and CI hosts must have it.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("required kernel feature missing in CI: %s", why)
	}
	t.Skipf("skipped: %s (a failure when CI=true)", why)
}

// RequireUserNS checks that this process can create a user namespace with
// a mount inside it (the probe `unshare -Urm true`); otherwise Unavailable.
func RequireUserNS(t testing.TB) {
	t.Helper()
	out, err := exec.Command("unshare", "--user", "--map-current-user", "--mount", "true").CombinedOutput()
	if err != nil {
		Unavailable(t, "user namespaces: unshare --user --mount failed: "+err.Error()+": "+string(out))
	}
}
