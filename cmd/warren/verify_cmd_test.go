package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/verify/batchfile"
)

// demoBatch is the demo batch, 3 proofs accepted and 6 rejected.
const demoBatch = "../../examples/coq/batch.jsonl"

// demoSummary is what the summary says of the demo batch's verdicts.
const demoSummary = "3 accepted, 6 rejected (compile_error 1, disallowed_axiom 1, incomplete 1, statement_mismatch 2, unsafe_flag 1)"

// expectedVerdicts reads examples/coq/expected.jsonl: the demo batch's
// verdicts by id.
func expectedVerdicts(t *testing.T) map[string]messages.Verdict {
	t.Helper()
	f, err := os.Open("../../examples/coq/expected.jsonl")
	require.NoError(t, err)
	defer f.Close()
	truth := map[string]messages.Verdict{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			ID string `json:"id"`
			messages.Verdict
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		truth[e.ID] = e.Verdict
	}
	require.NoError(t, sc.Err())
	require.Len(t, truth, 9)
	return truth
}

// derivedBatch is the batch id `warren verify path --profile profile`
// derives.
func derivedBatch(t *testing.T, path, profile string) string {
	t.Helper()
	tasks, err := batchfile.Load(path, profile)
	require.NoError(t, err)
	b, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{})
	require.NoError(t, err)
	return b.ID
}

// fakeVerifier registers a host serving default/default and default/coq
// and answers every default/coq task, until the test ends, with the
// verdict truth gives its id (a test peer over real NATS, standing in for
// a worker and Coq).
func (e *cliEnv) fakeVerifier(t *testing.T, truth map[string]messages.Verdict) {
	t.Helper()
	e.registerHost(t, "fake", messages.DefaultPool, messages.DefaultProfile, "coq")
	cons, err := broker.EnsureConsumer(e.ctx, e.b.JS, messages.DefaultPool, "coq", broker.ConsumerConfig{})
	require.NoError(t, err)
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		task, err := messages.DecodeTask(msg.Data())
		if err != nil {
			_ = msg.Term()
			return
		}
		v := truth[task.ID]
		r := messages.Result{V: messages.Version, TaskID: task.ID, Batch: task.Batch, Attempt: task.EffectiveAttempt(),
			Delivery: 1, Status: messages.StatusOK, Verdict: &v, Host: "fake"}
		b, _ := json.Marshal(&r)
		if _, err := e.b.JS.Publish(e.ctx, messages.ResultSubject(task.Batch, task.EffectiveAttempt(), task.ID), b); err != nil && !broker.IsResultExists(err) {
			_ = msg.Nak()
			return
		}
		_ = msg.Ack()
	})
	require.NoError(t, err)
	t.Cleanup(cc.Stop)
}

// requireUnpublished checks that nothing of batch was published: no task
// in WARREN_TASKS, no manifest.
func (e *cliEnv) requireUnpublished(t *testing.T, batch string) {
	t.Helper()
	require.Zero(t, e.taskCount(t, batch), "no task of %s published", batch)
	kv, err := e.b.JS.KeyValue(e.ctx, messages.BucketBatches)
	require.NoError(t, err)
	_, err = kv.Get(e.ctx, batch)
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "no manifest of %s written", batch)
}

// `warren verify` of a profile no live worker serves, by --profile or on
// a line of the batch, fails within seconds, before publishing anything,
// naming what is served and how to get a worker for it; --queue-unserved
// publishes anyway. Control: the served profile is checked.
func TestVerifyUnservedProfileFailsFast(t *testing.T) {
	t.Parallel()
	e := newCLIEnv(t)
	e.fakeVerifier(t, expectedVerdicts(t))

	data, err := os.ReadFile(demoBatch)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
	lines[4] = strings.Replace(lines[4], `{"id"`, `{"profile": "lean", "id"`, 1)
	leanLine := filepath.Join(t.TempDir(), "lean-line.jsonl")
	require.NoError(t, os.WriteFile(leanLine, []byte(strings.Join(lines, "")+"\n"), 0o644))

	for _, tt := range []struct {
		name, path, profile, missing string
	}{
		{"--profile", demoBatch, "nosuch", "default/nosuch"},
		{"a line naming a profile", leanLine, "coq", "default/lean"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := e.run(t, "", "verify", tt.path, "--profile", tt.profile)
			require.Less(t, time.Since(start), 10*time.Second, "refused at once, not after waiting")
			require.ErrorContains(t, r.err, "no live worker serves pool/profile "+tt.missing+" (served now: default/coq, default/default); nothing was published: start a worker for it (`warren worker --pool P --verify-profiles FILE`, FILE defining the profile), or pass --queue-unserved")
			require.NotContains(t, r.stderr, "verifying", "refused before publishing")
			e.requireUnpublished(t, derivedBatch(t, tt.path, tt.profile))
		})
	}

	t.Run("served profile: checked", func(t *testing.T) {
		r := e.run(t, "", "verify", demoBatch, "--profile", "coq")
		require.NoError(t, r.err, r.stderr)
		require.Contains(t, r.stderr, ": "+demoSummary)
		require.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), 9)
	})

	t.Run("--queue-unserved publishes", func(t *testing.T) {
		batch := derivedBatch(t, demoBatch, "nosuch")
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		done := make(chan cliRun, 1)
		go func() {
			done <- runClient(t, ctx, e.b.URL, "", "verify", demoBatch, "--profile", "nosuch", "--queue-unserved")
		}()
		// Queued and waiting for a worker that never comes: published.
		require.Eventually(t, func() bool { return e.taskCount(t, batch) == 9 }, 30*time.Second, 20*time.Millisecond)
		cancel()
		r := <-done
		require.Contains(t, r.stderr, "no live worker serves pool/profile default/nosuch (served now: default/coq, default/default); the tasks stay queued until one does")
	})
}

// The live line and the summary count accepted and rejected proofs apart:
// the demo batch is 3 accepted, 6 rejected, never "ok 9".
func TestVerifyCountsAcceptedAndRejected(t *testing.T) {
	t.Parallel()
	e := newCLIEnv(t)
	e.fakeVerifier(t, expectedVerdicts(t))
	r := e.run(t, "", "verify", demoBatch, "--profile", "coq", "--batch", "counts")
	require.NoError(t, r.err, r.stderr)
	require.Regexp(t, `(?m)^verify: 9/9 done \(3 accepted, 6 rejected\), [0-9.]+/s, took `, r.stderr)
	require.Regexp(t, `(?m)^9 proofs in [^:]+ \([0-9.]+ proofs/s\): `+regexp.QuoteMeta(demoSummary)+`$`, r.stderr)
	require.NotContains(t, r.stderr, "ok 9")

	// Re-attached, the stored verdicts are counted the same way.
	again := e.run(t, "", "verify", demoBatch, "--profile", "coq", "--batch", "counts")
	require.NoError(t, again.err, again.stderr)
	require.Contains(t, again.stderr, "verify: 9/9 done (3 accepted, 6 rejected)")
	require.Contains(t, again.stderr, "9 proofs (stored verdicts): "+demoSummary+"\n")
}

// The summary's counts: the truth of the demo batch, and tasks that
// reached no verdict counted apart, by status.
func TestVerifySummaryLine(t *testing.T) {
	t.Parallel()
	s := newVerifySummary()
	for id, v := range expectedVerdicts(t) {
		s.add(&messages.Result{TaskID: id, Status: messages.StatusOK, Verdict: &v})
	}
	total, text := s.line()
	require.Equal(t, 9, total)
	require.Equal(t, demoSummary, text)
	s.add(&messages.Result{TaskID: "x", Status: messages.StatusInfraError})
	s.add(&messages.Result{TaskID: "y", Status: messages.StatusCancelled})
	total, text = s.line()
	require.Equal(t, 11, total)
	require.Equal(t, demoSummary+"; 2 not checked (cancelled 1, infra_error 1)", text)
}
