package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/warrenhq/warren/verify/batchfile"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
)

// TestCoqExamples checks examples/coq (what `make demo` verifies) against
// its expected.jsonl.
func TestCoqExamples(t *testing.T) {
	requireCoq(t)
	sb := testRunner(t)
	p := testProfiles(t).Get("coq")
	c := newTestChecker(t)
	tasks, err := batchfile.Load(filepath.Join("..", "examples", "coq", "batch.jsonl"), "coq")
	require.NoError(t, err)
	f, err := os.Open(filepath.Join("..", "examples", "coq", "expected.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	want := map[string]messages.Verdict{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			ID string `json:"id"`
			messages.Verdict
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		want[e.ID] = e.Verdict
	}
	require.Len(t, want, len(tasks))
	for _, task := range tasks {
		t.Run(task.ID, func(t *testing.T) {
			t.Parallel()
			v, _, err := c.Check(context.Background(), sb.run, p, task.Verify)
			require.NoError(t, err)
			require.Equal(t, want[task.ID].Accepted, v.Accepted, "%+v", v)
			require.Equal(t, want[task.ID].Reason, v.Reason, v.Messages)
		})
	}
}
