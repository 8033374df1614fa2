package verify

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandbox.MaybeInit() // sandboxes re-exec this binary as their init when no dedicated init was built
	var removeInit func()
	testInitPath, removeInit = sandboxtest.InitForMain()
	code := m.Run()
	removeInit()
	if code == 0 {
		// REPL pools and the service's single-flight own their goroutines
		// (Close waits for them): none may outlive the tests.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var inCI = os.Getenv("CI") == "true"

// testInitPath is the dedicated sandbox init (cmd/warren-sandbox-init) the
// tests' sandboxes start, as a worker installed by `make build` does; ""
// when it could not be built (they then re-exec this binary).
var testInitPath string

type testSandbox struct {
	run      RunFunc
	isolated bool
	why      string // why isolation is off
}

var (
	sandboxOnce sync.Once
	sandboxTB   testSandbox
	insecureRun RunFunc
)

// testRunner returns a RunFunc backed by the sandbox package: real
// isolation (auto) when the host and the sandbox package provide it, else
// the explicitly insecure mode. Under CI=true a missing isolation fails.
func testRunner(t testing.TB) testSandbox {
	t.Helper()
	sandboxOnce.Do(func() {
		root := filepath.Join(os.TempDir(), "warren-verify-test-sandboxes")
		ins, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: root})
		if err == nil {
			err = ins.Start(context.Background())
		}
		if err != nil {
			panic(err)
		}
		insecureRun = ins.Run
		auto, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationAuto, ScratchRoot: root, InitPath: testInitPath})
		if err == nil {
			err = auto.Start(context.Background())
		}
		if err == nil {
			_, err = auto.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}})
		}
		if err == nil {
			sandboxTB = testSandbox{run: auto.Run, isolated: true}
			return
		}
		sandboxTB = testSandbox{run: ins.Run, why: err.Error()}
	})
	if !sandboxTB.isolated && inCI {
		t.Fatalf("CI=true but sandbox isolation is unavailable: %s", sandboxTB.why)
	}
	return sandboxTB
}

// requireCoq skips when coqc is missing, except under CI where it fails.
func requireCoq(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"/usr/bin/coqc", "/usr/bin/coqchk"} {
		if _, err := exec.LookPath(bin); err != nil {
			if inCI {
				t.Fatalf("CI=true but %s is missing: install Debian's coq package (.ci/run does)", bin)
			}
			t.Skipf("%s not installed (apt-get install -y coq); CI installs it and runs this test", bin)
		}
	}
}

func testProfiles(t testing.TB) *Profiles {
	t.Helper()
	ps, err := LoadProfiles(filepath.Join("..", "testdata", "verify", "coq-profiles.yaml"))
	require.NoError(t, err)
	return ps
}

func newTestChecker(t testing.TB) *Checker {
	t.Helper()
	// Not t.TempDir: its 0700 parent would stop the sandbox uids.
	root, err := os.MkdirTemp("", "warren-verify-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	c, err := New(Config{ScratchRoot: root})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func testLogger() zerolog.Logger { return zerolog.Nop() }
