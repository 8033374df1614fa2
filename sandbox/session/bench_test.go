package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/warrenhq/warren/sandbox"
)

// BenchmarkExecTrue measures `true` run through a live session against a
// one-shot Runner.Run of `true` on the same runner (cold and, with
// Prestart, warm), reporting p50 and p99 latencies. This is the
// in-process part of an exec over NATS.
func BenchmarkExecTrue(b *testing.B) {
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			// The run's own home (the runner copies the agent's stdio) and a
			// caller's (the agent's pipes are lent to it as files).
			for name, home := range map[string]func(b *testing.B) string{
				"session":      func(*testing.B) string { return "" },
				"session-home": func(b *testing.B) string { return homeDir(b) },
			} {
				b.Run(name, func(b *testing.B) {
					s := start(b, newRunner(b, mode), Spec{Home: home(b)})
					req := ExecRequest{Argv: []string{"true"}}
					latencies(b, func() error {
						res, err := s.Exec(context.Background(), req, nil, nil)
						if err == nil && res.ExitCode != 0 {
							b.Fatalf("exit %d", res.ExitCode)
						}
						return err
					})
				})
			}
			for _, prestart := range []int{0, 1} {
				name := map[int]string{0: "oneshot-cold", 1: "oneshot-warm"}[prestart]
				b.Run(name, func(b *testing.B) {
					r, err := sandbox.New(sandbox.Config{Isolation: mode, InitPath: testInitPath, Prestart: prestart})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = r.Close() })
					spec := sandbox.Spec{Argv: []string{"true"}}
					latencies(b, func() error {
						res, err := r.Run(context.Background(), spec)
						if err == nil && res.ExitCode != 0 {
							b.Fatalf("exit %d", res.ExitCode)
						}
						return err
					})
				})
			}
		})
	}
}

func latencies(b *testing.B, op func() error) {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkStartClose measures a session's whole life with nothing in it:
// Start until the agent's hello (cold, and from a warm sandbox), then Close
// until teardown is verified. The warm case sleeps between sessions (not
// timed in start-p50) so the refill is not measured as a cold start.
func BenchmarkStartClose(b *testing.B) {
	for _, mode := range modes {
		for _, warm := range []bool{false, true} {
			b.Run(string(mode)+map[bool]string{false: "/cold", true: "/warm"}[warm], func(b *testing.B) {
				r := newRunner(b, mode)
				if warm {
					r = warmRunner(b, mode)
				}
				spec := Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Wall: time.Minute}}}
				var starts []time.Duration
				latencies(b, func() error {
					t0 := time.Now()
					s, err := Start(context.Background(), r, spec)
					if err != nil {
						return err
					}
					starts = append(starts, time.Since(t0))
					err = s.Close(context.Background())
					if warm {
						// Let the refill finish, as between a host's creates.
						time.Sleep(30 * time.Millisecond)
					}
					return err
				})
				slices.Sort(starts)
				b.ReportMetric(float64(starts[len(starts)/2].Microseconds())/1000, "start-p50-ms")
				b.ReportMetric(float64(starts[len(starts)*99/100].Microseconds())/1000, "start-p99-ms")
			})
		}
	}
}

// homeDir is a caller's home for a session: a fresh directory whose
// parent sandbox uids can pass.
func homeDir(tb testing.TB) string {
	tb.Helper()
	parent, err := os.MkdirTemp("", "warren-session-home-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(parent, "home")
}
