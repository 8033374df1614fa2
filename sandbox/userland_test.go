package sandbox

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// userlandProbe asks what everyday programs ask: who runs them, the port
// of a service name, the system's version; and tries the host secrets
// /etc holds, which must stay out of reach.
const userlandProbe = `
import getpass, os, socket
print("user", getpass.getuser())
print("http", socket.getservbyname("http", "tcp"))
print("tcp", socket.getprotobyname("tcp"))
for f in ["/etc/debian_version", "/etc/os-release"]:
    if os.path.exists(f):
        open(f).read()
        print("read", f)
for f in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/machine-id", "/etc/ssh"]:
    try:
        if os.path.isdir(f):
            os.listdir(f)
        else:
            open(f).read()
        print("SECRET", f)
    except OSError:
        pass
`

// TestEverydayProgramsWork: in both isolated modes a program learns its
// user name (USER, LOGNAME: the sandbox uid has no passwd entry), service
// and protocol names resolve, and the system's version files read, while
// /etc's host secrets stay unreadable. The control: the host has the
// secrets the probe looks for.
func TestEverydayProgramsWork(t *testing.T) {
	_, err := os.Stat("/etc/shadow")
	require.NoError(t, err, "control: the host has /etc/shadow")
	for _, tc := range []struct {
		name string
		r    func(*testing.T) *Runner
	}{
		{"namespace", nsRunner},
		{"landlock", func(t *testing.T) *Runner { return llRunner(t, 1_900_104_000) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runIn(t, tc.r(t), Spec{Argv: []string{"/usr/bin/python3", "-c", userlandProbe}})
			require.Equal(t, 0, o.res.ExitCode, o.stderr)
			require.Contains(t, o.stdout, "user sandbox\n")
			require.Contains(t, o.stdout, "http 80\n")
			require.Contains(t, o.stdout, "tcp 6\n")
			if _, err := os.Stat("/etc/debian_version"); err == nil {
				require.Contains(t, o.stdout, "read /etc/debian_version\n")
			}
			require.NotContains(t, o.stdout, "SECRET", "a host secret under /etc was readable")
			require.False(t, strings.Contains(o.stderr, "Traceback"), o.stderr)
		})
	}
}

// TestLimitsFollowTheOnesSet: a CPU limit not asked for is at least the
// wall limit, and a file-size limit not asked for is the home's disk
// limit; limits asked for stay as asked.
func TestLimitsFollowTheOnesSet(t *testing.T) {
	t.Parallel()
	d := DefaultLimits
	for _, tc := range []struct {
		name           string
		asked          Limits
		cpu            time.Duration
		fileSize, disk int64
	}{
		{"defaults", Limits{}, d.CPU, d.FileSize, 0},
		{"a longer wall limit", Limits{Wall: 6 * time.Minute}, 6 * time.Minute, d.FileSize, 0},
		{"a shorter wall limit keeps the default CPU", Limits{Wall: time.Minute}, d.CPU, d.FileSize, 0},
		{"a disk limit", Limits{Disk: 2 << 30}, d.CPU, 2 << 30, 2 << 30},
		{"a small disk limit", Limits{Disk: 100 << 20}, d.CPU, 100 << 20, 100 << 20},
		{"asked for", Limits{Wall: 6 * time.Minute, CPU: time.Minute, FileSize: 1 << 20, Disk: 2 << 30}, time.Minute, 1 << 20, 2 << 30},
	} {
		l := resolveLimits(tc.asked, d)
		require.Equal(t, tc.cpu, l.CPU, tc.name)
		require.Equal(t, tc.fileSize, l.FileSize, tc.name)
		require.Equal(t, tc.disk, l.Disk, tc.name)
	}
}

// TestProgramsRunFromTmp: a program the sandbox writes in its TMPDIR (a
// compiler's output, a venv's interpreter) runs, as one in its home does
// (the control), in each mode: namespace cold, a template's task, and
// Landlock, whose TMPDIR is a directory of the home.
func TestProgramsRunFromTmp(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func(*testing.T) *Runner
	}{
		{"namespace", nsRunner},
		{"template", func(t *testing.T) *Runner { return templateRunner(t, 1) }},
		{"landlock", func(t *testing.T) *Runner { return llRunner(t, 1_900_104_010) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runIn(t, tc.r(t), Spec{Argv: sh(`cp /bin/true "$HOME/t" && "$HOME/t" && echo home-exec; cp /bin/true "$TMPDIR/t" && "$TMPDIR/t" && echo tmp-exec`)})
			require.Equal(t, 0, o.res.ExitCode, o.stderr)
			require.Equal(t, "home-exec\ntmp-exec\n", o.stdout, o.stderr)
		})
	}
}
