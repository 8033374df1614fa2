package session

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/files"
)

// viewKind is an isolation a session may run in, as its home is made.
type viewKind struct {
	name string
	cfg  sandbox.Config
	warm bool // a session takes the runner's warm sandbox (a slot when the config makes slots)
	// rootOnly: an unprivileged worker refuses its sessions (a bounded
	// Landlock-only home: it cannot mount the tmpfs).
	rootOnly bool
}

// viewKinds: namespace alone, Landlock alone, both, bounded homes (a tmpfs
// the root worker mounts on the host) and the warm slot, whose task home
// is a tmpfs mounted over the slot's directory in the task's own mount
// namespace.
func viewKinds() []viewKind {
	bounded := sandbox.Limits{Disk: sandbox.DefaultDisk}
	return []viewKind{
		// A floor above this kernel's Landlock ABI: the namespace mode
		// without the Landlock and seccomp layer.
		{name: "namespace", cfg: sandbox.Config{Isolation: sandbox.IsolationNamespace, LandlockMinABI: 11}},
		{name: "landlock", cfg: sandbox.Config{Isolation: sandbox.IsolationLandlock}},
		{name: "namespace+landlock", cfg: sandbox.Config{Isolation: sandbox.IsolationNamespace}},
		{name: "landlock-bounded", cfg: sandbox.Config{Isolation: sandbox.IsolationLandlock, Defaults: bounded}, rootOnly: true},
		{name: "slot", cfg: sandbox.Config{Isolation: sandbox.IsolationNamespace, Defaults: bounded, Prestart: 1}, warm: true},
	}
}

// runnerFor makes k's runner; a warm one has its sandbox ready (waitWarm).
func runnerFor(t *testing.T, k viewKind) *sandbox.Runner {
	t.Helper()
	r := newRunnerWith(t, k.cfg)
	if k.warm {
		warmUp(t, r)
	}
	return r
}

// warmUp runs one session so the runner has a pool for the session's
// view, and waits until its warm sandbox is ready.
func warmUp(t *testing.T, r *sandbox.Runner) {
	t.Helper()
	require.NoError(t, r.Start(context.Background()))
	s := start(t, r, Spec{})
	require.NoError(t, s.Close(context.Background()))
	waitWarm(t, r)
}

// waitWarm waits until the runner's warm sandboxes are ready, none being
// built: the default view's (Start) and the session view's.
func waitWarm(t *testing.T, r *sandbox.Runner) {
	t.Helper()
	eventually(t, "the warm sandboxes are ready", func() bool { w := r.Warm(); return w.Ready == 2 && w.Starting == 0 })
}

// TestFileMethodsServeTheCommandsHome: in every isolation a session runs
// in, what a command writes the file methods list and read, and what they
// write the next command reads and rewrites. On a slot, where the host
// directory at the home's path is the slot's and not the task's, what the
// file methods write is not there.
func TestFileMethodsServeTheCommandsHome(t *testing.T) {
	for _, k := range viewKinds() {
		t.Run(k.name, func(t *testing.T) {
			r := runnerFor(t, k)
			if k.rootOnly && os.Geteuid() != 0 {
				_, err := Start(context.Background(), r, Spec{})
				require.ErrorIs(t, err, sandbox.ErrDiskQuotaUnavailable)
				return
			}
			s := start(t, r, Spec{})
			ctx := context.Background()
			res, _, errOut := run(t, s, sh(`mkdir -p sub && echo by-command > sub/cmd.txt`))
			require.Equal(t, 0, res.ExitCode, errOut)
			got, err := s.Read(ctx, "sub/cmd.txt", 0, -1)
			require.NoError(t, err, "the file methods see what the command wrote")
			require.Equal(t, "by-command\n", string(got))
			list, err := s.List(ctx, "sub")
			require.NoError(t, err)
			require.Equal(t, []string{"cmd.txt"}, entryNames(list))

			_, err = s.Write(ctx, "api.txt", []byte("by-api"), files.WriteOptions{})
			require.NoError(t, err)
			res, out, errOut := run(t, s, sh(`cat api.txt && echo +cmd >> api.txt`))
			require.Equal(t, 0, res.ExitCode, errOut)
			require.Equal(t, "by-api", out, "the command sees what the file methods wrote")
			got, err = s.Read(ctx, "api.txt", 0, -1)
			require.NoError(t, err)
			require.Equal(t, "by-api+cmd\n", string(got))

			if k.name == "slot" {
				_, err := os.Lstat(filepath.Join(s.Home(), "api.txt"))
				require.ErrorIs(t, err, os.ErrNotExist, "nothing lands in the slot's own directory under the task's home")
			}
			require.NoError(t, s.Close(ctx))
			t.Logf("layers in force: %s", s.Result().InForce)
			if k.name == "slot" || k.name == "namespace+landlock" {
				require.Equal(t, "namespace+landlock+seccomp", s.Result().InForce)
			}
		})
	}
}

// TestSlotSessionLeavesNothingForTheNext: a session on a warm slot leaves
// files (through the file methods and through commands, in the home, /tmp
// and /dev/shm) and a background process; once it is closed, the next
// session on the same slot (same home path, same uid) finds none of them,
// through the file methods, its commands or the host's process table. The
// control: the first session's own probes find every one.
func TestSlotSessionLeavesNothingForTheNext(t *testing.T) {
	k := viewKinds()[4]
	require.Equal(t, "slot", k.name)
	r := runnerFor(t, k)
	ctx := context.Background()
	marker := "7" + strconv.Itoa(int(time.Now().UnixNano()%1e8))

	a := start(t, r, Spec{})
	_, err := a.Write(ctx, "api.txt", []byte("tenant a's upload"), files.WriteOptions{})
	require.NoError(t, err)
	res, _, errOut := run(t, a, sh(`echo a > cmd.txt && echo a > /tmp/tmp.txt && echo a > /dev/shm/shm.txt`))
	require.Equal(t, 0, res.ExitCode, errOut)
	_, err = a.Exec(ctx, ExecRequest{Argv: []string{"sleep", marker}, Background: true}, nil, nil)
	require.NoError(t, err)
	eventually(t, "the background sleep runs", func() bool { return len(hostProcsWith(t, marker)) == 1 })
	require.Equal(t, leftovers{api: true, cmd: true, tmp: true, shm: true, procs: 1}, probeLeftovers(t, a, marker), "control: the probes see the traces")
	home, uid := a.Home(), a.hello.UID
	require.NoError(t, a.Close(ctx))
	waitWarm(t, r)

	b := start(t, r, Spec{})
	require.Equal(t, home, b.Home(), "the same slot serves the next session")
	require.Equal(t, uid, b.hello.UID, "the same slot serves the next session")
	require.Equal(t, leftovers{}, probeLeftovers(t, b, marker), "nothing of the first session is left")
	_, err = b.Read(ctx, "api.txt", 0, -1)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// leftovers is what probeLeftovers found of a session's traces.
type leftovers struct {
	api, cmd, tmp, shm bool
	procs              int
}

// probeLeftovers looks for the traces through s's file methods and
// commands, and for the background process on the host.
func probeLeftovers(t *testing.T, s *Session, marker string) leftovers {
	t.Helper()
	ctx := context.Background()
	list, err := s.List(ctx, "")
	require.NoError(t, err)
	names := entryNames(list)
	_, out, _ := run(t, s, sh(`for f in "$HOME/api.txt" "$HOME/cmd.txt" /tmp/tmp.txt /dev/shm/shm.txt; do test -e "$f" && echo "$f"; done; true`))
	var l leftovers
	l.api = contains(names, "api.txt") || strings.Contains(out, "/api.txt")
	l.cmd = contains(names, "cmd.txt") || strings.Contains(out, "/cmd.txt")
	l.tmp = strings.Contains(out, "/tmp/tmp.txt")
	l.shm = strings.Contains(out, "/dev/shm/shm.txt")
	l.procs = len(hostProcsWith(t, marker))
	return l
}

func entryNames(es []files.Entry) []string {
	names := []string{}
	for _, e := range es {
		names = append(names, e.Name)
	}
	return names
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
