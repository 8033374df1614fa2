package verify

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

// modeRunner returns a RunFunc for one isolation mode; outside CI a host
// without the mode skips, in CI it fails.
func modeRunner(t *testing.T, iso sandbox.Isolation) RunFunc {
	t.Helper()
	root := filepath.Join(os.TempDir(), "warren-verify-test-sandboxes")
	r, err := sandbox.New(sandbox.Config{Isolation: iso, ScratchRoot: root})
	if err == nil {
		t.Cleanup(func() { _ = r.Close() })
		err = r.Start(context.Background())
	}
	if err == nil {
		_, err = r.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}})
	}
	if err != nil {
		if inCI {
			t.Fatalf("CI=true but isolation %s is unavailable: %v", iso, err)
		}
		t.Skipf("isolation %s unavailable here: %v", iso, err)
	}
	return r.Run
}

// TestCoqCorpusSameVerdictsInEveryMode: the whole corpus gets the same
// verdict (accepted, reason) and the same toolchain fingerprint in
// namespace and in Landlock mode, so a verdict (and a cached one) does not
// depend on which kind of host decided it.
func TestCoqCorpusSameVerdictsInEveryMode(t *testing.T) {
	requireCoq(t)
	ps := testProfiles(t)
	plantCanary(t)
	modes := []sandbox.Isolation{sandbox.IsolationNamespace, sandbox.IsolationLandlock}
	runs := map[sandbox.Isolation]RunFunc{}
	for _, m := range modes {
		runs[m] = modeRunner(t, m)
	}
	svc, skipped := NewService(newTestChecker(t), ps, nil)
	require.Empty(t, skipped)
	type got struct {
		accepted  bool
		reason    messages.Reason
		toolchain string
	}
	var mu sync.Mutex
	verdicts := map[sandbox.Isolation]map[string]got{}
	cases := loadCorpus(t)
	t.Run("modes", func(t *testing.T) {
		for _, m := range modes {
			verdicts[m] = map[string]got{}
			for _, tc := range cases {
				t.Run(string(m)+"/"+tc.ID, func(t *testing.T) {
					t.Parallel()
					task := &messages.Task{V: messages.Version, ID: tc.ID, Batch: "det", Attempt: 1, Kind: messages.KindVerify,
						Profile: tc.Profile, Verify: tc.spec(t)}
					out, err := svc.Verify(context.Background(), runs[m], task)
					require.NoError(t, err)
					require.Equal(t, tc.Expect.Reason, out.Verdict.Reason, "%s in %s mode: %s", tc.ID, m, out.Verdict.Messages)
					mu.Lock()
					verdicts[m][tc.ID] = got{out.Verdict.Accepted, out.Verdict.Reason, out.Verdict.Toolchain}
					mu.Unlock()
				})
			}
		}
	})
	require.NotEmpty(t, verdicts[modes[0]]) // all of the corpus, or what -run selected
	require.Equal(t, verdicts[modes[0]], verdicts[modes[1]], "namespace and Landlock verdicts differ")
}
