package coqpolicy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

var inCI = os.Getenv("CI") == "true"

var (
	buildOnce  sync.Once
	builtDir   string
	builtError error
)

// testPlugin builds the plugin once for the package's tests (into a
// directory removed by TestMain), or skips when Coq's development files
// are missing outside CI.
func testPlugin(t testing.TB) *Plugin {
	t.Helper()
	for _, bin := range []string{"coqc", "ocamlfind"} {
		if _, err := exec.LookPath(bin); err != nil {
			if inCI {
				t.Fatalf("CI=true but %s is missing (make deps installs coq and libcoq-core-ocaml-dev)", bin)
			}
			t.Skipf("%s not installed: apt-get install coq libcoq-core-ocaml-dev", bin)
		}
	}
	buildOnce.Do(func() {
		builtDir, builtError = os.MkdirTemp("", "warren-coqpolicy-test-")
		if builtError == nil {
			_, builtError = Build(context.Background(), builtDir, "ocamlfind")
		}
	})
	require.NoError(t, builtError)
	return &Plugin{Dir: builtDir}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// compiled is what one coqc run with the plugin left.
type compiled struct {
	dir     string
	exit    int
	output  string
	reading *Reading
}

// compile runs coqc on src (as Proof.v, with files beside it) with the
// plugin under policy, outside any sandbox: the plugin's own behaviour.
func compile(t testing.TB, p *Plugin, src string, policy Policy, files map[string]string) compiled {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Proof.v"), []byte(src), 0o644))
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	policy.Out = "records.jsonl"
	args := append([]string{"-q", "-noglob"}, p.Args()...)
	args = append(args, "-Q", ".", "Top", "Proof.v")
	cmd := exec.Command("coqc", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for k, v := range policy.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	c := compiled{dir: dir, output: string(out)}
	if ee, ok := err.(*exec.ExitError); ok {
		c.exit = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "records.jsonl"))
	require.NoError(t, err, "the plugin wrote no records: %s", out)
	c.reading, err = Parse(raw)
	require.NoError(t, err)
	require.True(t, c.reading.Ready, "no ready record: %s", out)
	return c
}

// exists reports whether the compile left a file matching the pattern
// name (filepath.Match: a tool may add a unique suffix).
func (c compiled) exists(name string) bool {
	m, err := filepath.Glob(filepath.Join(c.dir, name))
	return err == nil && len(m) > 0
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }
