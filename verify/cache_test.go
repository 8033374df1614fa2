package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// countingService is a Service on a real broker's verdict bucket whose
// proof check is counted: "good" proofs are accepted, "slow" ones time
// out, "broken" ones fail as an infrastructure error, others do not
// compile. The cache, not the checker, is under test here;
// TestServiceCacheRealCoq runs real checks.
type countingService struct {
	*Service
	checks atomic.Int64
}

func newCountingService(t *testing.T, ps *Profiles, cache VerdictCache) *countingService {
	t.Helper()
	requireCoq(t) // the coq profiles are offered only where coqc exists
	svc, skipped := NewService(newTestChecker(t), ps, cache)
	require.Empty(t, skipped)
	cs := &countingService{Service: svc}
	svc.check = func(ctx context.Context, _ RunFunc, p *Profile, spec *messages.VerifySpec) (*messages.Verdict, Usage, error) {
		cs.checks.Add(1)
		switch {
		case strings.Contains(spec.Proof, "broken"):
			return nil, Usage{}, &InfraError{Step: "test", Err: errors.New("sandbox unavailable")}
		case strings.Contains(spec.Proof, "slow"):
			return reject(messages.ReasonTimeout, "too slow"), Usage{Steps: 1}, nil
		case strings.Contains(spec.Proof, "good"):
			return &messages.Verdict{Accepted: true}, Usage{Steps: 3}, nil
		}
		return reject(messages.ReasonCompileError, "no"), Usage{Steps: 1}, nil
	}
	return cs
}

func cacheTask(batch string, i int, proof string) *messages.Task {
	return &messages.Task{V: messages.Version, ID: fmt.Sprintf("t%d", i), Batch: batch, Attempt: 1, Kind: messages.KindVerify,
		Profile: "coq", Verify: &messages.VerifySpec{Theorem: "t", Statement: "True", Proof: proof}}
}

var noRun RunFunc = func(context.Context, sandbox.Spec) (*sandbox.Result, error) {
	return nil, errors.New("the counting service runs nothing")
}

// runBatch verifies tasks with par goroutines and returns the outcomes by id.
func runBatch(t *testing.T, s *countingService, tasks []*messages.Task, par int) map[string]*Outcome {
	t.Helper()
	var mu sync.Mutex
	out := map[string]*Outcome{}
	ch := make(chan *messages.Task)
	var wg sync.WaitGroup
	for range par {
		wg.Go(func() {
			for task := range ch {
				o, err := s.Verify(context.Background(), noRun, task)
				if !assert.NoError(t, err) {
					continue
				}
				mu.Lock()
				out[task.ID] = o
				mu.Unlock()
			}
		})
	}
	for _, task := range tasks {
		ch <- task
	}
	close(ch)
	wg.Wait()
	return out
}

// batch200 is 200 tasks, 100 distinct proofs each sent twice under
// different ids, the duplicates next to each other so that they are in
// flight together.
func batch200(batch string) []*messages.Task {
	var tasks []*messages.Task
	for i := range 200 {
		tasks = append(tasks, cacheTask(batch, i, fmt.Sprintf("proof %d good", i/2)))
	}
	return tasks
}

func TestServiceCacheBatch(t *testing.T) {
	br := brokertest.Start(t, brokertest.Options{})
	_, js := br.Dial(t, "host-a")
	ps := testProfiles(t)
	a := newCountingService(t, ps, NewKVCache(js))

	got := runBatch(t, a, batch200("b1"), 16)
	require.Len(t, got, 200)
	require.LessOrEqual(t, a.checks.Load(), int64(100), "50%% duplicates: at most 100 real checks")
	require.Equal(t, int64(100), a.checks.Load(), "every distinct proof checked once")
	cached := 0
	for _, o := range got {
		require.True(t, o.Verdict.Accepted)
		require.Equal(t, a.prints["coq"], o.Verdict.Toolchain, "every verdict carries the toolchain")
		if o.Verdict.Cached {
			cached++
			require.False(t, o.Verdict.FirstDecidedAt.IsZero())
			require.Zero(t, o.Wall, "nothing ran")
		}
	}
	require.Equal(t, 100, cached)

	// The same proofs under a new batch id, and from another host: no check.
	_, js2 := br.Dial(t, "host-b")
	b := newCountingService(t, ps, NewKVCache(js2))
	got = runBatch(t, b, batch200("b2"), 16)
	require.Zero(t, b.checks.Load(), "a new batch of known proofs on another host checks nothing")
	for _, o := range got {
		require.True(t, o.Verdict.Cached)
	}

	// Another tenant's batch of the same proofs is checked afresh: a
	// cached answer would tell it that someone checked them before.
	e := newCountingService(t, ps, NewKVCache(js))
	runBatch(t, e, batch200("alice.b5"), 16)
	require.Equal(t, int64(100), e.checks.Load(), "the cache is scoped per tenant")
	f := newCountingService(t, ps, NewKVCache(js))
	runBatch(t, f, batch200("alice.b6"), 16)
	require.Zero(t, f.checks.Load(), "within a tenant, across batches, it is shared")

	// A changed policy is another key: checked again.
	changed := testProfiles(t)
	changed.Get("coq").DeclaredAxioms = AxiomsUsedOnly
	c := newCountingService(t, changed, NewKVCache(js))
	require.NotEqual(t, a.prints["coq"], c.prints["coq"])
	runBatch(t, c, batch200("b3"), 16)
	require.Equal(t, int64(100), c.checks.Load(), "a policy change checks again")

	// Another toolchain (another coqc binary) is another key.
	other := testProfiles(t)
	other.Get("coq").Coq.Coqchk = "/usr/bin/coqc"
	d := newCountingService(t, other, NewKVCache(js))
	require.NotEqual(t, a.prints["coq"], d.prints["coq"])
	o, err := d.Verify(context.Background(), noRun, cacheTask("b4", 0, "proof 0 good"))
	require.NoError(t, err)
	require.False(t, o.Verdict.Cached)
	require.Equal(t, int64(1), d.checks.Load())
}

func TestServiceCacheNeverServesAnotherToolchain(t *testing.T) {
	br := brokertest.Start(t, brokertest.Options{})
	_, js := br.Dial(t, "host")
	cache := NewKVCache(js)
	s := newCountingService(t, testProfiles(t), cache)
	task := cacheTask("b", 0, "forged")
	// An entry under the right key whose verdict names another toolchain
	// (a key collision or a forged entry) is not served.
	key := CacheKey(s.prints["coq"], messages.BatchTenant(task.Batch), task.Verify)
	require.NoError(t, cache.Put(context.Background(), key, &CachedVerdict{
		Verdict: &messages.Verdict{Accepted: true, Toolchain: "coq:other"}, DecidedAt: time.Now()}))
	o, err := s.Verify(context.Background(), noRun, task)
	require.NoError(t, err)
	require.False(t, o.Verdict.Accepted)
	require.False(t, o.Verdict.Cached)
	require.Equal(t, int64(1), s.checks.Load())
}

func TestServiceCacheBypassAndUncacheable(t *testing.T) {
	br := brokertest.Start(t, brokertest.Options{})
	_, js := br.Dial(t, "host")
	s := newCountingService(t, testProfiles(t), NewKVCache(js))
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { return first }
	ctx := context.Background()

	o, err := s.Verify(ctx, noRun, cacheTask("b", 0, "p good"))
	require.NoError(t, err)
	require.False(t, o.Verdict.Cached)
	s.now = time.Now
	o, err = s.Verify(ctx, noRun, cacheTask("b", 1, "p good"))
	require.NoError(t, err)
	require.True(t, o.Verdict.Cached)
	require.Equal(t, first, o.Verdict.FirstDecidedAt.UTC(), "when the verdict was first decided")
	require.Equal(t, int64(1), s.checks.Load())

	// no_cache: checked again, not served from the cache.
	bypass := cacheTask("b", 2, "p good")
	bypass.Verify.NoCache = true
	o, err = s.Verify(ctx, noRun, bypass)
	require.NoError(t, err)
	require.False(t, o.Verdict.Cached)
	require.Equal(t, int64(2), s.checks.Load())

	// Timeouts and infrastructure errors are never cached.
	for i := range 2 {
		o, err = s.Verify(ctx, noRun, cacheTask("b", 10+i, "p slow"))
		require.NoError(t, err)
		require.Equal(t, messages.ReasonTimeout, o.Verdict.Reason)
		require.False(t, o.Verdict.Cached)
	}
	for i := range 2 {
		_, err = s.Verify(ctx, noRun, cacheTask("b", 20+i, "p broken"))
		var ie *InfraError
		require.ErrorAs(t, err, &ie)
	}
	require.Equal(t, int64(6), s.checks.Load())
}

// TestServiceCacheRealCoq: identical real proofs in flight together make
// one real check (two sandbox runs: the compile, then the trusted steps 2
// and 3 together), through the real checker.
func TestServiceCacheRealCoq(t *testing.T) {
	requireCoq(t)
	sb := testRunner(t)
	br := brokertest.Start(t, brokertest.Options{})
	_, js := br.Dial(t, "host")
	svc, skipped := NewService(newTestChecker(t), testProfiles(t), NewKVCache(js))
	require.Empty(t, skipped)
	var steps atomic.Int64
	run := func(ctx context.Context, s sandbox.Spec) (*sandbox.Result, error) {
		steps.Add(1)
		return sb.run(ctx, s)
	}
	var tc corpusCase
	for _, c := range loadCorpus(t) {
		if c.ID == "good_add_zero" {
			tc = c
		}
	}
	var wg sync.WaitGroup
	verdicts := make([]*messages.Verdict, 4)
	for i := range verdicts {
		wg.Go(func() {
			task := &messages.Task{V: messages.Version, ID: fmt.Sprintf("t%d", i), Batch: "b", Attempt: 1, Kind: messages.KindVerify,
				Profile: "coq", Verify: tc.spec(t)}
			o, err := svc.Verify(context.Background(), run, task)
			if assert.NoError(t, err) {
				verdicts[i] = o.Verdict
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(2), steps.Load(), "one real check (two sandbox runs) for four identical proofs")
	cached := 0
	for _, v := range verdicts {
		require.True(t, v.Accepted, "%+v", v)
		require.True(t, strings.HasPrefix(v.Toolchain, "coq:"), v.Toolchain)
		if v.Cached {
			cached++
		}
	}
	require.Equal(t, 3, cached)
}
