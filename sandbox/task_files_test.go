package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/files"
)

// workerLike is a started Runner configured as a worker's, in one mode:
// homes bounded at disk (Defaults.Disk; unbounded: -1) and a warm sandbox
// of the default view ready (Prestart), a template where the mode makes
// them.
type workerLike struct {
	name      string
	iso       Isolation
	minLL     int   // Config.LandlockMinABI; above the kernel's: no layer, no templates
	disk      int64 // Config.Defaults.Disk
	templates bool
	// inForce is the runs' Result.InForce: the mode did run them.
	inForce string
}

// workerLikes: namespace alone, Landlock alone and auto (namespace with
// the Landlock and seccomp layer: templates). An unprivileged worker cannot
// bound a Landlock-only home: its Landlock runs are unbounded, as the
// operator must then choose.
func workerLikes() []workerLike {
	const disk = 64 << 20
	ll := int64(disk)
	if os.Geteuid() != 0 {
		ll = -1
	}
	return []workerLike{
		{name: "namespace", iso: IsolationNamespace, minLL: len(landlockABIFeatures) - 1, disk: disk, inForce: "namespace"},
		{name: "landlock", iso: IsolationLandlock, disk: ll, inForce: "landlock+seccomp"},
		{name: "auto", iso: IsolationAuto, disk: disk, templates: true, inForce: "namespace+landlock+seccomp"},
	}
}

// runner is w's Runner, started, with a scratch root of its own.
func (w workerLike) runner(t *testing.T) *Runner {
	t.Helper()
	if w.minLL == 0 {
		llRequire(t, landlockMinABIDefault)
	}
	root := nsRunner(t).cfg.ScratchRoot
	r, err := startedNew(Config{Isolation: w.iso, ScratchRoot: root, Prestart: 1, LandlockMinABI: w.minLL, Defaults: Limits{Disk: w.disk}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

// waitWarmReady waits until r's one warm sandbox is ready and none is
// being built.
func waitWarmReady(t *testing.T, r *Runner) {
	t.Helper()
	require.Eventually(t, func() bool { w := r.Warm(); return w.Ready == 1 && w.Starting == 0 },
		30*time.Second, 2*time.Millisecond, "the warm sandbox is ready: %+v", r.Warm())
}

// TestTaskFilesInEveryRunOfAWorker: ten tasks in a row on one runner per
// mode, each with files of its own: every task reads its own files at
// their paths under its home, and nothing of the task before it; each
// takes the warm sandbox the runner has ready (on auto, the same template).
func TestTaskFilesInEveryRunOfAWorker(t *testing.T) {
	for _, w := range workerLikes() {
		t.Run(w.name, func(t *testing.T) {
			r := w.runner(t)
			homes := map[string]int{}
			for i := range 10 {
				waitWarmReady(t, r)
				out := runIn(t, r, Spec{
					Argv:  sh(`cat ../in/f.txt && echo && ls -A "$HOME/in" && echo "$HOME"`),
					Files: map[string][]byte{"in/f.txt": []byte(fmt.Sprintf("task %d", i)), fmt.Sprintf("in/only-%d", i): nil},
					Cwd:   "work",
				})
				require.Equal(t, 0, out.res.ExitCode, out.stderr)
				require.Equal(t, w.inForce, out.res.InForce)
				lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
				require.Len(t, lines, 4, out.stdout)
				require.Equal(t, []string{fmt.Sprintf("task %d", i), "f.txt", fmt.Sprintf("only-%d", i)}, lines[:3], "task %d", i)
				homes[lines[3]]++
			}
			if w.templates {
				require.Len(t, homes, 1, "one template served every task: %v", homes)
			}
		})
	}
}

// TestTaskFilesPastTheDiskLimit: a task whose files do not fit its disk
// limit fails its setup with files.ErrDiskFull naming the limit, in every
// mode, cold and on a template; the command never runs. The control: the
// same files under a limit that takes them. An unprivileged worker
// refuses a bounded Landlock-only run before anything is written.
func TestTaskFilesPastTheDiskLimit(t *testing.T) {
	const mib = 1 << 20
	big := map[string][]byte{"big": make([]byte, 2*mib)}
	for _, w := range workerLikes() {
		t.Run(w.name, func(t *testing.T) {
			r := w.runner(t)
			for _, limit := range []int64{mib, 4 * mib} {
				if w.templates {
					waitWarmReady(t, r)
				}
				res, err := r.Run(context.Background(), Spec{Argv: sh(`wc -c < big`), Files: big, Limits: Limits{Disk: limit, Wall: time.Minute}})
				if w.disk < 0 {
					require.ErrorIs(t, err, ErrDiskQuotaUnavailable)
					continue
				}
				if limit == mib {
					require.ErrorIs(t, err, files.ErrDiskFull)
					require.ErrorContains(t, err, "("+strconv.Itoa(mib)+" bytes)", "the error names the limit")
					require.Nil(t, res)
					continue
				}
				require.NoError(t, err, "control: within the limit")
				require.Equal(t, 0, res.ExitCode)
			}
		})
	}
}
