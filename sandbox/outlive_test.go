package sandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
)

// TestNothingOutlivesARun: a chain of 200 processes, each in a session of
// its own and the parent of the next, and a process that changes its pid
// without end (sandboxtest.Hopper: a new session at every hop) are gone
// with their run when it is cancelled, in the namespace mode and the
// Landlock mode, cold and warm (a root worker's uid kill; an ordinary
// user's orphan sweep): the sweeps have no time cap that lets either
// live on. The controls: the chain's processes and the hopper's hops are
// seen while the run lives (TestKillAllTakesAPIDHopper shows the hopper
// outliving a kill of its session). The chain runs where a sweep ends it
// (the Landlock mode); a pid namespace's end takes it whole.
func TestNothingOutlivesARun(t *testing.T) {
	hopper, err := os.ReadFile(sandboxtest.Hopper(t))
	require.NoError(t, err)
	chain := sandboxtest.TrickNamed("setsid-chain")
	programs := []struct {
		name string
		spec func(marker string) Spec
		// ready is what stdout shows once the program is in place.
		ready string
		// modes are the entries it runs in: the chain (slow to build)
		// only where a sweep, not a pid namespace, ends it.
		modes []string
	}{
		{"setsid-chain of 200", func(marker string) Spec {
			return Spec{Argv: append(chain.Argv(marker, true), "200"), Limits: Limits{Processes: 256}}
		}, "chain 200\nready\n", []string{"landlock cold"}},
		{"pid-hopper", func(marker string) Spec {
			return Spec{Argv: []string{"/bin/sh", "-c", `chmod +x hopper && exec ./hopper "$0"`, marker},
				Files: map[string][]byte{"hopper": hopper}, Limits: Limits{Processes: 64}}
		}, "ready\n....", []string{"namespace cold", "landlock cold", "landlock warm"}},
	}
	entries := endEntries(1_900_102_060)
	for _, e := range entries {
		if !slices.Contains([]string{"namespace cold", "landlock cold", "landlock warm"}, e.name) {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			r, iso := e.runner(t)
			for _, p := range programs {
				if !slices.Contains(p.modes, e.name) {
					continue
				}
				t.Run(p.name, func(t *testing.T) {
					marker := fmt.Sprintf("warren-outlive-%d", time.Now().UnixNano())
					spec := p.spec(marker)
					stdout := sandboxtest.NewLineWatch("")
					spec.Isolation, spec.Stdout, spec.Limits.Wall = iso, stdout, 5*time.Minute
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					done := make(chan error, 1)
					go func() {
						res, err := r.Run(ctx, spec)
						if err == nil && res.Signal != "SIGKILL" {
							err = fmt.Errorf("not killed: %+v", res)
						}
						done <- err
					}()
					deadline := time.Now().Add(time.Minute)
					for !strings.HasPrefix(stdout.String(), p.ready) {
						select {
						case err := <-done:
							t.Fatalf("ended before it was in place: %v, stdout %q", err, stdout.String())
						default:
						}
						require.True(t, time.Now().Before(deadline), "not in place: stdout %q", stdout.String())
						time.Sleep(10 * time.Millisecond)
					}
					require.NotEmpty(t, sandboxtest.MarkerProcs(marker), "control: the program's processes are seen while it runs")
					cancel()
					select {
					case err := <-done:
						require.NoError(t, err)
					case <-time.After(endBound + endSlack):
						t.Fatalf("no result %s after the cancel", endBound+endSlack)
					}
					// A hopper is one process at a time, under a new pid each
					// time: looked for over a second.
					for look := time.Now().Add(time.Second); time.Now().Before(look); {
						require.Empty(t, sandboxtest.MarkerProcs(marker), "processes of the run outlive it")
					}
					printed := len(stdout.String())
					time.Sleep(100 * time.Millisecond)
					require.Equal(t, printed, len(stdout.String()), "something of the run still prints")
				})
			}
		})
	}
}
