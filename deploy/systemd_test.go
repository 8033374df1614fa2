package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var units = []string{"warren-broker.service", "warren-worker.service"}

// TestSystemdUnitsVerify runs `systemd-analyze verify` on the units (with
// ExecStart pointed at an executable that exists here). It reports every
// unknown key or bad value as a warning with exit 0, so any output fails
// the test. Skipped only where systemd-analyze is not installed (Debian:
// apt-get install systemd).
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd)")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	var paths []string
	for _, u := range units {
		data, err := os.ReadFile(filepath.Join("systemd", u))
		require.NoError(t, err)
		require.Contains(t, string(data), "ExecStart=/usr/local/bin/warren ")
		p := filepath.Join(dir, u)
		require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "/usr/local/bin/warren", self)), 0o644))
		paths = append(paths, p)
	}
	out, err := exec.Command(analyze, append([]string{"verify"}, paths...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify warnings")
}

// TestSystemdEnvFileDefinesWhatUnitsUse checks the env file is KEY=VALUE
// lines and defines every ${VAR} the units' command lines use.
func TestSystemdEnvFileDefinesWhatUnitsUse(t *testing.T) {
	f, err := os.Open("systemd/warren.env")
	require.NoError(t, err)
	defer f.Close()
	defined := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, ok := strings.Cut(line, "=")
		require.True(t, ok, "not KEY=VALUE: %q", line)
		require.Regexp(t, `^WARREN_[A-Z_]+$`, k)
		defined[k] = true
	}
	require.NoError(t, sc.Err())
	ref := regexp.MustCompile(`\$\{([A-Z_]+)\}`)
	for _, u := range units {
		data, err := os.ReadFile(filepath.Join("systemd", u))
		require.NoError(t, err)
		for _, m := range ref.FindAllStringSubmatch(string(data), -1) {
			require.True(t, defined[m[1]], "%s uses ${%s}, not in warren.env", u, m[1])
		}
	}
}
