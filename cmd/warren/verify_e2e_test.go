package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/internal/syncbuf"
	"github.com/warrenhq/warren/messages"
)

// corpusCase is one line of testdata/verify/coq/manifest.jsonl.
type corpusCase struct {
	ID        string `json:"id"`
	Theorem   string `json:"theorem"`
	Statement string `json:"statement"`
	Header    string `json:"header"`
	ProofFile string `json:"proof_file"`
	Profile   string `json:"profile"`
	Expect    struct {
		Accepted bool            `json:"accepted"`
		Reason   messages.Reason `json:"reason"`
	} `json:"expect"`
}

// TestE2EVerifyCoqCorpus runs the whole attack corpus through the whole
// system: `warren verify` (scheduler) -> broker -> `warren worker` ->
// sandbox -> Coq. Zero false accepts; every good proof accepted.
func TestE2EVerifyCoqCorpus(t *testing.T) {
	requireCoq(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	corpus := filepath.Join(root, "testdata/verify/coq")
	f, err := os.Open(filepath.Join(corpus, "manifest.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var cases []corpusCase
	var batch bytes.Buffer
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c corpusCase
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		proof, err := os.ReadFile(filepath.Join(corpus, c.ProofFile))
		require.NoError(t, err)
		line, err := json.Marshal(map[string]string{"id": c.ID, "theorem": c.Theorem, "statement": c.Statement, "header": c.Header, "proof": string(proof), "profile": c.Profile})
		require.NoError(t, err)
		batch.Write(append(line, '\n'))
		cases = append(cases, c)
	}
	require.NotEmpty(t, cases)
	in := filepath.Join(t.TempDir(), "corpus.jsonl")
	require.NoError(t, os.WriteFile(in, batch.Bytes(), 0o644))

	e := newE2E(t)
	// A real worker with the default isolation (auto: fail closed) and the
	// test profiles.
	w := e.cmd(t.Context(), "worker", "--capacity", "2", "--verify-profiles", filepath.Join(root, "testdata/verify/coq-profiles.yaml"), "--host-id", "verifier")
	werr := &syncbuf.Buffer{} // the process writes while the test reads
	w.Stderr = werr
	require.NoError(t, w.Start())
	// Ended by SIGTERM when the test's context ends (it drains and closes
	// its runner), not the default SIGKILL: a killed root worker leaves
	// its warm homes' tmpfs mounted until the next worker on the scratch
	// root sweeps them.
	w.Cancel = func() error { return w.Process.Signal(syscall.SIGTERM) }
	t.Cleanup(func() { _ = w.Wait() })
	// verify refuses a profile no live worker serves: wait until it is.
	e.waitRegistered(t, werr.String)

	out := filepath.Join(t.TempDir(), "results.jsonl")
	_, stderr, code := e.runFor(t, 10*time.Minute, "verify", in, "--out", out)
	require.Equal(t, 0, code, "verify failed: %s\nworker: %s", stderr, werr.String())
	require.Contains(t, stderr, "proofs/s")

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	got := map[string]verifyLine{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v verifyLine
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		got[v.ID] = v
	}
	require.Len(t, got, len(cases))
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			r := got[c.ID]
			require.Equal(t, messages.StatusOK, r.Status, "error: %+v", r.Error)
			require.NotNil(t, r.Verdict)
			if !c.Expect.Accepted {
				require.False(t, r.Verdict.Accepted, "FALSE ACCEPT of %s", c.ID)
			}
			require.Equal(t, c.Expect.Accepted, r.Verdict.Accepted, fmt.Sprintf("verdict %+v", r.Verdict))
			require.Equal(t, c.Expect.Reason, r.Verdict.Reason, r.Verdict.Messages)
			if r.Verdict.Reason != messages.ReasonDisallowedCommand {
				// A disallowed command is refused before any step runs: no sandbox to name.
				require.NotEmpty(t, r.Sandbox)
			}
			require.NotContains(t, r.Sandbox, "none", "verdicts come from sandboxed steps")
			require.True(t, strings.HasPrefix(r.Verdict.Toolchain, "coq:"), "every verdict carries the toolchain fingerprint: %q", r.Verdict.Toolchain)
			require.False(t, r.Verdict.Cached, "no proof of the corpus repeats another under the same profile")
		})
	}

	// The same batch again: its stored verdicts, said so, with no
	// throughput claimed for checks that did not run.
	again := filepath.Join(t.TempDir(), "again.jsonl")
	_, stderr, code = e.runFor(t, time.Minute, "verify", in, "--out", again)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "this batch was submitted before: showing its stored verdicts")
	require.Contains(t, stderr, "(stored verdicts)")
	require.NotContains(t, stderr, "proofs/s")
	data2, err := os.ReadFile(again)
	require.NoError(t, err)
	require.ElementsMatch(t, strings.Split(strings.TrimSpace(string(data)), "\n"), strings.Split(strings.TrimSpace(string(data2)), "\n"))

	// The same proofs under a new batch id: decided before, so answered
	// from the verdict cache, identically; timeouts and out-of-memory
	// verdicts are never cached and are checked again.
	cachedOut := filepath.Join(t.TempDir(), "cached.jsonl")
	_, stderr, code = e.runFor(t, 5*time.Minute, "verify", in, "--batch", "corpus-again", "--out", cachedOut)
	require.Equal(t, 0, code, stderr)
	data3, err := os.ReadFile(cachedOut)
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(string(data3)), "\n") {
		var v verifyLine
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		first := got[v.ID]
		require.NotNil(t, v.Verdict, l)
		require.Equal(t, first.Verdict.Accepted, v.Verdict.Accepted, v.ID)
		require.Equal(t, first.Verdict.Reason, v.Verdict.Reason, "%s: %s", v.ID, v.Verdict.Messages)
		require.Equal(t, first.Verdict.Toolchain, v.Verdict.Toolchain, v.ID)
		switch first.Verdict.Reason {
		case messages.ReasonTimeout, messages.ReasonOutOfMemory:
			require.False(t, v.Verdict.Cached, "%s: a %s is never cached", v.ID, first.Verdict.Reason)
		default:
			require.True(t, v.Verdict.Cached, "%s: answered from the cache", v.ID)
			require.False(t, v.Verdict.FirstDecidedAt.IsZero(), v.ID)
		}
	}

	// --no-cache checks again.
	fresh := filepath.Join(t.TempDir(), "fresh.jsonl")
	one := filepath.Join(t.TempDir(), "one.jsonl")
	first, _, _ := strings.Cut(batch.String(), "\n")
	require.NoError(t, os.WriteFile(one, []byte(first+"\n"), 0o644))
	_, stderr, code = e.runFor(t, 2*time.Minute, "verify", one, "--no-cache", "--out", fresh)
	require.Equal(t, 0, code, stderr)
	data4, err := os.ReadFile(fresh)
	require.NoError(t, err)
	var v verifyLine
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(data4), &v))
	require.True(t, v.Verdict.Accepted)
	require.False(t, v.Verdict.Cached, "--no-cache: checked afresh")
	require.NotEmpty(t, v.Sandbox)
}

// requireCoq skips a test that needs Coq where it is not installed, and
// fails it in CI, where it must be.
func requireCoq(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("coqc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("coqc missing in CI: .ci/run installs Debian's coq (make deps)")
		}
		t.Skip("coqc not installed (make deps installs Debian's coq)")
	}
}
