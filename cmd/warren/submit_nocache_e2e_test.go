package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// TestE2ESubmitNoCache: through `warren submit --wait` and a real worker
// with the verdict cache, a proof decided once is answered from the cache
// under another batch id, and `--no-cache` makes a real check where the
// cache would have answered.
func TestE2ESubmitNoCache(t *testing.T) {
	requireCoq(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	proof, err := os.ReadFile(filepath.Join(root, "testdata/verify/coq/good_add_zero.v"))
	require.NoError(t, err)
	line, err := json.Marshal(map[string]any{"id": "p", "kind": "verify", "profile": "coq",
		"verify": map[string]string{"theorem": "add_zero", "statement": "forall n : nat, n + 0 = n", "proof": string(proof)}})
	require.NoError(t, err)
	in := filepath.Join(t.TempDir(), "one.jsonl")
	require.NoError(t, os.WriteFile(in, append(line, '\n'), 0o644))

	e := newE2E(t)
	e.startWorker(t, 1, "--verify-profiles", filepath.Join(root, "testdata/verify/coq-profiles.yaml"))
	submit := func(args ...string) *messages.Result {
		t.Helper()
		out, stderr, code := e.runFor(t, 3*time.Minute, append([]string{"submit", "--wait", in}, args...)...)
		require.Equal(t, 0, code, stderr)
		var r messages.Result
		require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &r), out)
		require.Equal(t, messages.StatusOK, r.Status, out)
		require.NotNil(t, r.Verdict, out)
		require.True(t, r.Verdict.Accepted, out)
		return &r
	}
	first := submit("--batch", "nocache-1")
	require.False(t, first.Verdict.Cached, "first decision: checked")
	require.NotEmpty(t, first.Sandbox, "a real check ran sandboxed steps")

	cached := submit("--batch", "nocache-2")
	require.True(t, cached.Verdict.Cached, "the same proof under another batch: the cache answers")
	require.Empty(t, cached.Sandbox, "no step ran")

	fresh := submit("--batch", "nocache-3", "--no-cache")
	require.False(t, fresh.Verdict.Cached, "--no-cache: checked afresh")
	require.NotEmpty(t, fresh.Sandbox, "a real check ran sandboxed steps")
	require.Positive(t, fresh.WallMS)
}
