package sandbox

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// primedTemplates lists, in the pool's order, whether each waiting template
// of the default view has its next task's init made (tests).
func primedTemplates(r *Runner) []bool {
	k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
	var primed []bool
	for _, w := range r.warm.sandboxes() {
		if w.key == k {
			r.warm.mu.Lock()
			primed = append(primed, w.primed)
			r.warm.mu.Unlock()
		}
	}
	return primed
}

// deferringRunner is a template Runner whose refill's deferral is an hour,
// with all its templates' inits made.
func deferringRunner(t *testing.T, templates int) *Runner {
	t.Helper()
	r := templateRunner(t, templates)
	r.warm.mu.Lock()
	r.warm.refillDelay = time.Hour
	r.warm.mu.Unlock()
	waitTemplates(t, r, templates)
	waitPrimed(t, r, slices.Repeat([]bool{true}, templates), "every template has its init made")
	return r
}

// deferring counts the default view's templates deferring their refill.
func deferring(r *Runner) int {
	k := namespaceMode{}.warmKey(Spec{Limits: r.cfg.Defaults})
	r.warm.mu.Lock()
	defer r.warm.mu.Unlock()
	return r.warm.views[k].deferring
}

func waitDeferring(t *testing.T, r *Runner, n int, msg string) {
	t.Helper()
	require.Eventually(t, func() bool { return deferring(r) == n }, 20*time.Second, 2*time.Millisecond, msg)
}

func waitPrimed(t *testing.T, r *Runner, want []bool, msg string) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Equal(primedTemplates(r), want) }, 20*time.Second, 2*time.Millisecond, msg)
}

// blockedRun starts a task that waits until release is called, then runs
// script, and returns release, which waits for the run and returns its
// stdout. A test that fails first releases it in its cleanup, before the
// Runner closes: a run still in flight when the test binary exits would
// leave its template's home mounted on the host.
func blockedRun(t *testing.T, r *Runner, spec Spec, script string) (release func() string) {
	t.Helper()
	in, feed := io.Pipe()
	var out bytes.Buffer
	spec.Argv, spec.Stdin, spec.Stdout, spec.Limits.Wall = sh(`read x; echo "$x"; `+script), in, &out, 30*time.Second
	done := make(chan error, 1)
	go func() { _, err := r.Run(context.Background(), spec); done <- err }()
	var (
		once sync.Once
		err  error
	)
	finish := func(line string) {
		once.Do(func() {
			if line != "" {
				_, _ = io.WriteString(feed, line)
			}
			_ = feed.Close() // at the cleanup only EOF: the run may be gone already
			err = <-done
		})
	}
	t.Cleanup(func() { finish("") })
	return func() string {
		finish("released\n")
		require.NoError(t, err)
		return out.String()
	}
}

// TestTemplateDefersItsRefillOnAnIdleHost: after a task on an otherwise
// idle host, a template whose pool holds another template with its init
// made does not make its own (the refill's deferral: an hour here) — the
// next task takes the other; the pool's next take ends the deferral (the
// template's init is made while that task runs), and a template back from a
// task while another runs refills at once.
func TestTemplateDefersItsRefillOnAnIdleHost(t *testing.T) {
	r := deferringRunner(t, 2)

	// A runs on the first template, which goes to the back of the pool and
	// defers: the second has its init.
	o := runIn(t, r, Spec{Argv: sh(`echo a`)})
	require.Equal(t, "a\n", o.stdout, o.stderr)
	waitDeferring(t, r, 1, "the template that ran A defers its refill")
	require.Equal(t, []bool{true, false}, primedTemplates(r), "the template that ran A has no init made")

	// B takes the second template: the first makes its init while B runs.
	release := blockedRun(t, r, Spec{}, "")
	waitPrimed(t, r, []bool{true}, "the take of B ended the first template's deferral")
	require.Equal(t, 0, deferring(r))
	require.Equal(t, "released\n", release())
	waitDeferring(t, r, 1, "the template that ran B defers (the host is idle, the other has its init)")
	require.Equal(t, []bool{true, false}, primedTemplates(r))

	// C, with a disk limit of its own, takes the first template; the
	// second, woken by that take, has its init made while C runs; then the
	// first defers.
	release = blockedRun(t, r, Spec{Limits: Limits{Disk: 8 << 20}}, `df -k "$HOME" | tail -1`)
	waitPrimed(t, r, []bool{true}, "the take of C ended the second template's deferral")
	out := release()
	require.Equal(t, "8192", strings.Fields(out)[2], "C's home has its own disk limit: %s", out)
	waitDeferring(t, r, 1, "the template that ran C defers")
	require.Equal(t, []bool{true, false}, primedTemplates(r))
}

// TestTemplateRefillsAtOnceOnABusyHost: a template back from a task while
// another template runs one makes its next init at once, though a third has
// its own.
func TestTemplateRefillsAtOnceOnABusyHost(t *testing.T) {
	r := deferringRunner(t, 3)
	release := blockedRun(t, r, Spec{}, "") // the first template, until released
	waitPrimed(t, r, []bool{true, true}, "two templates wait, inits made")
	o := runIn(t, r, Spec{Argv: sh(`echo c`)}) // the second template
	require.Equal(t, "c\n", o.stdout, o.stderr)
	waitPrimed(t, r, []bool{true, true}, "the template that ran C refilled at once: another template runs a task")
	require.Equal(t, 0, deferring(r))
	require.Equal(t, "released\n", release())
}
