package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/verify/batchfile"
)

// TestE2EVerifyNoCacheChecksAgain: through `warren verify`, `warren
// replay` and a real worker with the verdict cache, --no-cache on a batch
// submitted before checks it again as a new attempt, by sandboxed steps,
// where without it the stored verdicts (verify) or the cache (replay)
// answer.
func TestE2EVerifyNoCacheChecksAgain(t *testing.T) {
	requireCoq(t)
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	proof, err := os.ReadFile(filepath.Join(root, "testdata/verify/coq/good_add_zero.v"))
	require.NoError(t, err)
	line, err := json.Marshal(map[string]string{"id": "p", "theorem": "add_zero", "statement": "forall n : nat, n + 0 = n", "proof": string(proof)})
	require.NoError(t, err)
	in := filepath.Join(t.TempDir(), "one.jsonl")
	require.NoError(t, os.WriteFile(in, append(line, '\n'), 0o644))

	e := newE2E(t)
	e.startWorker(t, 1, "--verify-profiles", filepath.Join(root, "testdata/verify/coq-profiles.yaml"))
	verify := func(args ...string) (verifyLine, string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.jsonl")
		_, stderr, code := e.runFor(t, 3*time.Minute, append([]string{"verify", in, "--out", out}, args...)...)
		require.Equal(t, 0, code, stderr)
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		var v verifyLine
		require.NoError(t, json.Unmarshal(data, &v), string(data))
		require.Equal(t, messages.StatusOK, v.Status, string(data))
		require.NotNil(t, v.Verdict, string(data))
		require.True(t, v.Verdict.Accepted, string(data))
		return v, stderr
	}
	requireChecked := func(v verifyLine, what string) {
		t.Helper()
		require.False(t, v.Verdict.Cached, "%s: checked afresh, not from the cache", what)
		require.NotEmpty(t, v.Sandbox, "%s: a real check ran sandboxed steps", what)
		require.Positive(t, v.WallMS, what)
	}

	first, _ := verify("--batch", "nc")
	requireChecked(first, "the first decision")

	// Control: the same batch again shows its stored verdict; nothing
	// is checked, no attempt made.
	stored, stderr := verify("--batch", "nc")
	require.Contains(t, stderr, "this batch was submitted before: showing its stored verdicts")
	require.Equal(t, first, stored)
	require.Zero(t, e.resultCount(t, "nc", 2))

	// --no-cache: checked again, as attempt 2.
	fresh, stderr := verify("--batch", "nc", "--no-cache")
	require.Contains(t, stderr, "this batch was submitted before; --no-cache: checking it again as attempt 2")
	require.EqualValues(t, 1, e.resultCount(t, "nc", 2))
	requireChecked(fresh, "verify --no-cache of a stored batch")

	// The derived batch id: the first --no-cache run is a batch of its own
	// (no_cache is part of its tasks); the same command again checks it
	// again, as attempt 2, instead of showing what the first run stored.
	tasks, err := batchfile.Load(in, "coq")
	require.NoError(t, err)
	nb, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{NoCache: true})
	require.NoError(t, err)
	v, _ := verify("--no-cache")
	requireChecked(v, "verify --no-cache, first run")
	require.Zero(t, e.resultCount(t, nb.ID, 2))
	v, stderr = verify("--no-cache")
	require.Contains(t, stderr, "this batch was submitted before; --no-cache: checking it again as attempt 2")
	require.EqualValues(t, 1, e.resultCount(t, nb.ID, 2))
	requireChecked(v, "verify --no-cache, run again")

	replay := func(args ...string) *messages.Result {
		t.Helper()
		out, stderr, code := e.runFor(t, 3*time.Minute, append([]string{"replay", "nc", "--wait"}, args...)...)
		require.Equal(t, 0, code, stderr)
		r, err := messages.DecodeResult([]byte(strings.TrimSpace(out)))
		require.NoError(t, err, out)
		require.NotNil(t, r.Verdict, out)
		require.True(t, r.Verdict.Accepted, out)
		return r
	}
	// Control: a replay is answered from the verdict cache.
	cached := replay()
	require.Equal(t, 3, cached.Attempt)
	require.True(t, cached.Verdict.Cached, "a replay of a decided proof: the cache answers")
	require.Empty(t, cached.Sandbox, "no step ran")
	// replay --no-cache: checked afresh.
	r := replay("--no-cache")
	require.Equal(t, 4, r.Attempt)
	require.False(t, r.Verdict.Cached, "replay --no-cache: checked afresh")
	require.NotEmpty(t, r.Sandbox, "a real check ran sandboxed steps")
	require.Positive(t, r.WallMS)
}

// TestE2EVerifyEmbeddedDefault: with no broker running, `warren verify`
// starts an embedded broker and an in-process worker; a profile that
// worker does not offer fails within seconds, naming the ones it does,
// and publishes nothing. Control: the demo batch under a profile it
// offers is checked by real Coq, 3 proofs accepted and 6 rejected, which
// the live line and the summary both say.
func TestE2EVerifyEmbeddedDefault(t *testing.T) {
	requireCoq(t)
	t.Parallel()
	dataDir := t.TempDir()
	run := func(limit time.Duration, args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		c := exec.CommandContext(ctx, os.Args[0], args...)
		c.Env = append(withoutEnv(os.Environ(), "WARREN_NATS_URL"), e2eMainEnv+"=1", "WARREN_DATA_DIR="+dataDir, "WARREN_LOG_LEVEL=warn")
		_, stderr, code := runCmd(t, c)
		return stderr, code
	}

	start := time.Now()
	stderr, code := run(time.Minute, "verify", demoBatch, "--profile", "nosuch")
	require.Less(t, time.Since(start), 10*time.Second, "refused at once, not after waiting: %s", stderr)
	require.Equal(t, 1, code, stderr)
	require.Regexp(t, `no live worker serves pool/profile default/nosuch \(no broker is running, and the in-process worker this command started serves default/coq, [^)]*default/default\); nothing was published: ask for one of those, or start `+"`warren up --verify-profiles FILE`", stderr)
	require.NotContains(t, stderr, "verifying")

	// Nothing of the batch is in the data dir's store.
	srv, err := embedded.New(embedded.Config{DataDir: dataDir, DontListen: true})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	nc, err := srv.Connect()
	require.NoError(t, err)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	s, err := js.Stream(t.Context(), messages.StreamTasks)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "no task published")
	kv, err := js.KeyValue(t.Context(), messages.BucketBatches)
	require.NoError(t, err)
	_, err = kv.Get(t.Context(), derivedBatch(t, demoBatch, "nosuch"))
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "no manifest written")
	nc.Close()
	srv.Stop()
	<-srv.Stopped()

	out := filepath.Join(t.TempDir(), "results.jsonl")
	stderr, code = run(5*time.Minute, "verify", demoBatch, "--profile", "coq", "--out", out)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^verify: 9/9 done \(3 accepted, 6 rejected\), `, stderr)
	require.Regexp(t, `(?m)^9 proofs in [^:]+ \([0-9.]+ proofs/s\): `+regexp.QuoteMeta(demoSummary)+`$`, stderr)
	truth := expectedVerdicts(t)
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v verifyLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v))
		require.NotNil(t, v.Verdict, sc.Text())
		require.Equal(t, truth[v.ID].Accepted, v.Verdict.Accepted, v.ID)
		require.Equal(t, truth[v.ID].Reason, v.Verdict.Reason, v.ID)
		n++
	}
	require.Equal(t, 9, n)
}
