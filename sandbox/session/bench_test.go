package session

import (
	"context"
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
			b.Run("session", func(b *testing.B) {
				s := start(b, newRunner(b, mode), Spec{})
				req := ExecRequest{Argv: []string{"true"}}
				latencies(b, func() error {
					res, err := s.Exec(context.Background(), req, nil, nil)
					if err == nil && res.ExitCode != 0 {
						b.Fatalf("exit %d", res.ExitCode)
					}
					return err
				})
			})
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
// Start (a cold sandbox: a caller's scratch directory never takes a warm
// one) until the agent's hello, then Close until teardown is verified.
func BenchmarkStartClose(b *testing.B) {
	for _, mode := range modes {
		b.Run(string(mode), func(b *testing.B) {
			r := newRunner(b, mode)
			spec := Spec{Sandbox: sandbox.Spec{Limits: sandbox.Limits{Wall: time.Minute}}}
			var starts []time.Duration
			latencies(b, func() error {
				t0 := time.Now()
				s, err := Start(context.Background(), r, spec)
				if err != nil {
					return err
				}
				starts = append(starts, time.Since(t0))
				return s.Close(context.Background())
			})
			slices.Sort(starts)
			b.ReportMetric(float64(starts[len(starts)/2].Microseconds())/1000, "start-p50-ms")
		})
	}
}
