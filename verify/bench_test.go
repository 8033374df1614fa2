package verify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// goodCorpus returns the corpus's good proofs for the plain coq profile.
func goodCorpus(b *testing.B) []corpusCase {
	var out []corpusCase
	for _, c := range loadCorpus(b) {
		if c.Expect.Accepted && c.Profile == "coq" {
			out = append(out, c)
		}
	}
	return out
}

// directCoq is the same trusted check run directly on the host with no
// sandbox and no Checker: coqc, coqc Check.v, coqchk. It returns the time
// the three processes ran.
func directCoq(b *testing.B, dir string, c corpusCase, spec *messages.VerifySpec) time.Duration {
	lib := "WarrenProof_direct"
	src := spec.Proof
	if spec.Header != "" {
		src = spec.Header + "\n" + strings.TrimPrefix(src, "\ufeff") // as the checker does
	}
	ref := lib + ".Proof." + c.Theorem
	check := spec.Header + "\nDefinition e : Type := (" + spec.Statement + ").\nRequire " + lib + ".Proof.\n" +
		"Redirect \"l\" Locate Term " + ref + ".\nRedirect \"g\" Print Assumptions " + ref + ".\n" +
		"Definition c : e := @" + ref + ".\nRedirect \"a\" Print Assumptions c.\n"
	require.NoError(b, os.WriteFile(filepath.Join(dir, "Proof.v"), []byte(src), 0o644))
	require.NoError(b, os.WriteFile(filepath.Join(dir, "Check.v"), []byte(check), 0o644))
	var ran time.Duration
	for _, argv := range [][]string{
		{"coqc", "-q", "-noglob", "-Q", ".", lib, "Proof.v"},
		{"coqc", "-q", "-noglob", "-Q", ".", lib, "Check.v"},
		{"coqchk", "-silent", "-o", "-Q", ".", lib, "-norec", lib + ".Proof", "-norec", lib + ".Check"},
	} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		start := time.Now()
		out, err := cmd.CombinedOutput()
		ran += time.Since(start)
		require.NoError(b, err, "%s: %s", strings.Join(argv, " "), out)
	}
	return ran
}

// BenchmarkCoqCheck compares, in one run and with the same parallelism,
// the trusted Coq check run directly in a loop against the same check
// through the Checker and the sandbox. Metric: checker/direct throughput.
func BenchmarkCoqCheck(b *testing.B) {
	if _, err := exec.LookPath("coqc"); err != nil {
		b.Skip("coqc not installed")
	}
	cases := goodCorpus(b)
	ps := testProfiles(b)
	p := ps.Get("coq")
	sb := benchRunner(b)
	c := newTestChecker(b)
	const par = 2
	direct := measure(b, par, len(cases)*2, func(i int) {
		dir := b.TempDir()
		tc := cases[i%len(cases)]
		directCoq(b, dir, tc, tc.spec(b))
	})
	checker := measure(b, par, len(cases)*2, func(i int) {
		tc := cases[i%len(cases)]
		v, _, err := c.Check(context.Background(), sb, p, tc.spec(b))
		require.NoError(b, err)
		require.True(b, v.Accepted, "%+v", v)
	})
	b.ReportMetric(float64(len(cases)*2)/direct.Seconds(), "direct_proofs/s")
	b.ReportMetric(float64(len(cases)*2)/checker.Seconds(), "checker_proofs/s")
	b.ReportMetric(direct.Seconds()/checker.Seconds(), "checker/direct")
}

// BenchmarkCoqCache: a batch of 20 real Coq proofs of which 30% repeat
// earlier ones (other ids, same text), through Service at parallelism 2,
// with the verdict cache (a real broker's bucket, emptied each round by a
// fresh key space: every round uses new proof texts) against without.
// Run with -benchtime 1x (a second iteration would find every proof
// cached). Metric: cached/uncached throughput (goal >= 1.4; 1/0.7 = 1.43 is the
// ceiling when cached answers cost nothing).
func BenchmarkCoqCache(b *testing.B) {
	if _, err := exec.LookPath("coqc"); err != nil {
		b.Skip("coqc not installed")
	}
	var base corpusCase
	for _, c := range loadCorpus(b) {
		if c.ID == "good_add_zero" {
			base = c
		}
	}
	sb := benchRunner(b)
	br := brokertest.Start(b, brokertest.Options{})
	_, js := br.Dial(b, "bench")
	ps := testProfiles(b)
	cached, skipped := NewService(newTestChecker(b), ps, NewKVCache(js))
	require.Empty(b, skipped)
	plain, _ := NewService(newTestChecker(b), ps, nil)
	const n, distinct, par = 20, 14, 2
	round := 0
	batch := func() []*messages.Task {
		round++
		tasks := make([]*messages.Task, n)
		for i := range n {
			k := i
			if i >= distinct {
				k = (i * 5) % distinct // a repeat of an earlier proof
			}
			spec := base.spec(b)
			spec.Proof += fmt.Sprintf("\n(* round %d variant %d *)\n", round, k)
			tasks[i] = &messages.Task{V: messages.Version, ID: fmt.Sprintf("t%d", i), Batch: fmt.Sprint("r", round), Attempt: 1,
				Kind: messages.KindVerify, Profile: "coq", Verify: spec}
		}
		return tasks
	}
	run := func(svc *Service) time.Duration {
		tasks := batch()
		return measure(b, par, n, func(i int) {
			o, err := svc.Verify(context.Background(), sb, tasks[i])
			require.NoError(b, err)
			require.True(b, o.Verdict.Accepted, "%+v", o.Verdict)
		})
	}
	var withCache, without time.Duration
	for range 2 { // alternate so that outside load falls on both alike
		without += run(plain)
		withCache += run(cached)
	}
	b.ReportMetric(float64(2*n*b.N)/without.Seconds(), "uncached_proofs/s")
	b.ReportMetric(float64(2*n*b.N)/withCache.Seconds(), "cached_proofs/s")
	b.ReportMetric(without.Seconds()/withCache.Seconds(), "cached/uncached")
}

// BenchmarkReplPoolOverhead measures a proof through the pool (4 REPL
// requests, sandboxed process) against one bare request to the same
// double, both on warm processes.
func BenchmarkReplPoolOverhead(b *testing.B) {
	p := doubleProfile(b, 1, 1<<30)
	sb := benchRunner(b)
	pool, err := NewReplPool(context.Background(), sb, p, testLogger())
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	bare, err := startRepl(context.Background(), sb, p, p.Lean.Header)
	require.NoError(b, err)
	b.Cleanup(bare.kill)
	spec := &messages.VerifySpec{Theorem: "t", Statement: "P", Proof: "theorem t : P := trivial"}
	const n = 200
	baseline := measure(b, 1, n, func(int) {
		_, err := bare.request(context.Background(), time.Minute, map[string]any{"cmd": spec.Proof, "env": bare.headerEnv})
		require.NoError(b, err)
	})
	pooled := measure(b, 1, n, func(int) {
		v, _, err := pool.Check(context.Background(), spec)
		require.NoError(b, err)
		require.True(b, v.Accepted)
	})
	b.ReportMetric(float64(baseline.Microseconds())/n, "bare_request_us")
	b.ReportMetric(float64(pooled.Microseconds())/n, "pool_check_us")
	b.ReportMetric(pooled.Seconds()/baseline.Seconds(), "pool/bare")
}

// measure runs n jobs on par goroutines, b.N times, and returns the mean
// wall time of one round.
func measure(b *testing.B, par, n int, job func(i int)) time.Duration {
	var total time.Duration
	for range b.N {
		start := time.Now()
		var wg sync.WaitGroup
		next := make(chan int)
		for range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					job(i)
				}
			}()
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		total += time.Since(start)
	}
	return total / time.Duration(b.N)
}

func benchRunner(b *testing.B) RunFunc { return testRunner(b).run }

// BenchmarkCoqTrustedFold measures issue 12 point 6 in one run: steps 2
// and 3 of a real proof in one sandbox (trustedSteps, what the checker
// does) against the same two programs in two sandboxes (what it did),
// alternating on fresh copies of the same check directory. Metric:
// folded/separate wall time (below 1: the fold saves).
func BenchmarkCoqTrustedFold(b *testing.B) {
	if _, err := exec.LookPath("coqc"); err != nil {
		b.Skip("coqc not installed")
	}
	var tc corpusCase
	for _, c := range loadCorpus(b) {
		if c.ID == "good_add_zero" {
			tc = c
		}
	}
	p := testProfiles(b).Get("coq")
	run := benchRunner(b)
	ctx := context.Background()
	k := &coqCheck{p: p, spec: tc.spec(b), run: run, n: nonce()}
	c := newTestChecker(b) // its scratch root is traversable by the sandbox uids
	scratch := func() string {
		dir, cleanup, err := c.scratch("fold-")
		require.NoError(b, err)
		b.Cleanup(cleanup)
		return dir
	}
	compile := filepath.Join(scratch(), "compile")
	require.NoError(b, writeScratch(compile, map[string][]byte{"Proof.v": []byte(k.spec.Proof)}))
	out, v, err := runStep(ctx, run, p, &k.usage, sandbox.Spec{Argv: k.coqArgv(p.Coq.Coqc, "-q", "-noglob", "-Q", ".", k.lib(), "Proof.v"), Scratch: compile})
	require.NoError(b, err)
	require.Nil(b, v)
	require.Zero(b, out.res.ExitCode, out.output())
	vo, err := os.ReadFile(filepath.Join(compile, "Proof.vo"))
	require.NoError(b, err)
	fresh := func() string {
		dir := filepath.Join(scratch(), "check")
		require.NoError(b, writeScratch(dir, map[string][]byte{"Proof.vo": vo, "Check.v": []byte(k.checkFile())}))
		return dir
	}
	var folded, separate time.Duration
	for range b.N {
		dir := fresh()
		start := time.Now()
		step3, step2, v, err := k.trustedSteps(ctx, dir)
		folded += time.Since(start)
		require.NoError(b, err)
		require.Nil(b, v)
		require.Zero(b, step2.res.ExitCode, step2.output())
		require.Zero(b, step3.res.ExitCode, step3.output())

		dir = fresh()
		start = time.Now()
		for _, argv := range [][]string{
			k.coqArgv(p.Coq.Coqc, "-q", "-noglob", "-Q", ".", k.lib(), "Check.v"),
			k.coqArgv(p.Coq.Coqchk, "-silent", "-o", "-Q", ".", k.lib(), "-norec", k.lib()+".Proof", "-norec", k.lib()+".Check"),
		} {
			out, v, err := runStep(ctx, run, p, &k.usage, sandbox.Spec{Argv: argv, Scratch: dir})
			require.NoError(b, err)
			require.Nil(b, v)
			require.Zero(b, out.res.ExitCode, out.output())
		}
		separate += time.Since(start)
	}
	b.ReportMetric(float64(folded.Milliseconds())/float64(b.N), "folded_ms")
	b.ReportMetric(float64(separate.Milliseconds())/float64(b.N), "separate_ms")
	b.ReportMetric(folded.Seconds()/separate.Seconds(), "folded/separate")
}
