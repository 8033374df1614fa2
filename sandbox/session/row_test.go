package session

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
)

// workerKind is a runner configured as a worker's is, in one isolation
// mode: a disk limit on every home (Defaults.Disk) and a warm sandbox
// ready (Prestart), so the sessions after the first take warm sandboxes,
// slots where the mode makes them.
type workerKind struct {
	name string
	cfg  sandbox.Config
	// slots: the runner's warm sandboxes are slots, one reused session
	// after session.
	slots bool
	// inForce is the sessions' Result.InForce: the mode did run them.
	inForce string
}

// rowDisk is the disk limit of the workers' homes in these tests.
const rowDisk = 64 << 20

// workerKinds: namespace alone (the Landlock floor above this kernel's
// ABI), Landlock alone, and auto (namespace with the Landlock and seccomp
// layer: slots). An unprivileged worker cannot bound a Landlock-only home
// (it cannot mount; such runs are refused, TestDiskLimitHoldsForFileWrites):
// its Landlock worker runs unbounded, as the operator must then choose.
func workerKinds() []workerKind {
	landlockDisk := int64(rowDisk)
	if os.Geteuid() != 0 {
		landlockDisk = -1
	}
	return []workerKind{
		{name: "namespace", cfg: sandbox.Config{Isolation: sandbox.IsolationNamespace, LandlockMinABI: 11,
			Defaults: sandbox.Limits{Disk: rowDisk}, Prestart: 1}, inForce: "namespace"},
		{name: "landlock", cfg: sandbox.Config{Isolation: sandbox.IsolationLandlock,
			Defaults: sandbox.Limits{Disk: landlockDisk}, Prestart: 1}, inForce: "landlock+seccomp"},
		{name: "auto", cfg: sandbox.Config{Isolation: sandbox.IsolationAuto,
			Defaults: sandbox.Limits{Disk: rowDisk}, Prestart: 1}, slots: true, inForce: "namespace+landlock+seccomp"},
	}
}

// workerRunner is k's runner, started: its warm pool serves sessions.
func workerRunner(t *testing.T, k workerKind) *sandbox.Runner {
	t.Helper()
	r := newRunnerWith(t, k.cfg)
	require.NoError(t, r.Start(context.Background()))
	return r
}

// rowSessions is how many sessions run in a row on one runner.
const rowSessions = 10

// TestSessionsInARowServeTheSandboxesOwnHome: ten sessions in a row on
// one runner per kind, as root and as an unprivileged worker. In each,
// a file put in through the file methods is at its path for the
// sandbox's commands, a listing is what the sandbox's own ls shows, and
// what a command wrote reads back through the file methods; nothing of
// the session before it is there. The second session on takes the warm
// sandbox the runner made meanwhile: on auto, the same slot again.
func TestSessionsInARowServeTheSandboxesOwnHome(t *testing.T) {
	for _, k := range workerKinds() {
		t.Run(k.name, func(t *testing.T) {
			r := workerRunner(t, k)
			homes := map[string]int{}
			for i := range rowSessions {
				if i == 0 {
					waitIdle(t, r)
				} else {
					waitWarm(t, r) // the sessions' own warm sandbox, made after the first
				}
				s := start(t, r, Spec{})
				checkOneHome(t, s, i)
				homes[s.Home()]++
				require.NoError(t, s.Close(context.Background()))
				require.Equal(t, k.inForce, s.Result().InForce)
			}
			if k.slots {
				require.Len(t, homes, 2, "the first session runs cold, the nine after it on the one slot: %v", homes)
			}
		})
	}
}

// waitIdle waits until r's warm pool has nothing being built: a session
// started then takes a warm sandbox if the pool has one for its view.
func waitIdle(t *testing.T, r *sandbox.Runner) {
	t.Helper()
	eventually(t, "no warm sandbox is being built", func() bool { return r.Warm().Starting == 0 })
}

// checkOneHome runs session i's round trip in s: cp in, exec, ls, cp out.
func checkOneHome(t *testing.T, s *Session, i int) {
	t.Helper()
	ctx := context.Background()
	up := fmt.Sprintf("upload of session %d", i)
	_, err := s.Write(ctx, "in/up.txt", []byte(up), files.WriteOptions{Parents: true})
	require.NoError(t, err, "session %d", i)

	req := sh(`cat "$HOME/in/up.txt" && printf 'written by command %s' "$N" > "$HOME/out.txt" && mkdir -p made && : > made/empty`)
	req.Env = map[string]string{"N": fmt.Sprint(i)}
	res, out, errOut := run(t, s, req)
	require.Equal(t, 0, res.ExitCode, "session %d: %s", i, errOut)
	require.Equal(t, up, out, "session %d: the command sees the upload at its path", i)

	got, err := s.Read(ctx, "out.txt", 0, -1)
	require.NoError(t, err, "session %d", i)
	require.Equal(t, fmt.Sprintf("written by command %d", i), string(got), "session %d: the file methods read what the command wrote", i)

	for _, dir := range []string{"", "in", "made"} {
		require.Equal(t, insideListing(t, s, dir), apiListing(t, s, dir), "session %d: ls %q shows what the sandbox sees", i, dir)
	}
	names := apiListing(t, s, "")
	require.Contains(t, names, "in/ dir")
	require.Contains(t, names, fmt.Sprintf("out.txt file %d", len(got)))
}

// apiListing is the directory dir of s's home through the file methods:
// "name type[ size]" per entry (a size for files), sorted.
func apiListing(t *testing.T, s *Session, dir string) []string {
	t.Helper()
	es, err := s.List(context.Background(), dir)
	require.NoError(t, err)
	out := []string{}
	for _, e := range es {
		switch e.Type {
		case files.TypeFile:
			out = append(out, fmt.Sprintf("%s %s %d", e.Name, e.Type, e.Size))
		case files.TypeDir:
			out = append(out, e.Name+"/ dir")
		default:
			out = append(out, fmt.Sprintf("%s %s", e.Name, e.Type))
		}
	}
	sort.Strings(out)
	return out
}

// insideListing is the same listing as a command of s sees it.
func insideListing(t *testing.T, s *Session, dir string) []string {
	t.Helper()
	script := `cd "$HOME/$D" && for f in .* *; do
  case "$f" in .|..) continue;; esac
  [ -e "$f" ] || [ -L "$f" ] || continue
  if [ -L "$f" ]; then echo "$f symlink"
  elif [ -d "$f" ]; then echo "$f/ dir"
  elif [ -f "$f" ]; then echo "$f file $(stat -c %s "$f")"
  else echo "$f other"; fi
done`
	req := sh(script)
	req.Env = map[string]string{"D": dir}
	res, out, errOut := run(t, s, req)
	require.Equal(t, 0, res.ExitCode, errOut)
	lines := []string{}
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}
