package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// templateRunner is a started namespace-mode Runner with the Landlock and
// seccomp layers (its warm sandboxes are templates) and prestart templates.
func templateRunner(t *testing.T, prestart int) *Runner {
	t.Helper()
	if landlockABI().require(landlockMinABIDefault) != nil {
		t.Skip("Landlock ABI below the default floor: no seccomp layer, so no templates (single-use warm sandboxes, covered by init_warm_test.go)")
	}
	cold := nsRunner(t)
	r, err := startedNew(Config{Isolation: IsolationNamespace, ScratchRoot: cold.cfg.ScratchRoot, Prestart: prestart, Defaults: Limits{Disk: DefaultDisk}, Logger: zerolog.New(zerolog.NewTestWriter(t))})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	require.True(t, r.layered())
	return r
}

// waitTemplates waits until n templates of the default view are ready and
// returns their pids.
func waitTemplates(t *testing.T, r *Runner, n int) []int {
	t.Helper()
	return waitTemplatesFor(t, r, Spec{}, n)
}

// waitTemplatesFor waits until n templates of view's key are ready, and no
// other warm sandbox is being built, and returns their pids.
func waitTemplatesFor(t *testing.T, r *Runner, view Spec, n int) []int {
	t.Helper()
	view.Limits = view.Limits.withDefaults(r.cfg.Defaults)
	k := namespaceMode{}.warmKey(view)
	require.Eventually(t, func() bool { return r.warm.ready(k) == n && r.Warm().Starting == 0 }, 20*time.Second, 2*time.Millisecond, "templates ready")
	var pids []int
	for _, w := range r.warm.sandboxes() {
		if w.key == k {
			require.NotNil(t, w.template, "a layered namespace-mode warm sandbox is a template")
			pids = append(pids, w.pid)
		}
	}
	return pids
}

// TestTemplateServesTaskAfterTask: one template runs three tasks in turn,
// each as pid 1 of its own pid namespace, with its own files and cwd (owned
// by the task's uid, writable), and goes back to the pool after each.
func TestTemplateServesTaskAfterTask(t *testing.T) {
	r := templateRunner(t, 1)
	parent := waitTemplates(t, r, 1)
	for i := range 3 {
		o := runIn(t, r, Spec{Argv: sh(`echo $$; cat ../f; ls -a $HOME | tr '\n' ' '; echo; basename $PWD; [ "$(stat -c %u ../f)" = "$(id -u)" ] && echo own; touch x && echo writable`),
			Files: map[string][]byte{"f": []byte("file\n")}, Cwd: "sub"})
		require.Equal(t, 0, o.res.ExitCode, o.stderr)
		lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
		require.Equal(t, []string{"1", "file", ". .. .shm .tmp f sub ", "sub", "own", "writable"}, lines, "task %d: %s", i, o.stderr)
		require.Equal(t, parent, waitTemplates(t, r, 1), "the same template served task %d", i)
	}
}
