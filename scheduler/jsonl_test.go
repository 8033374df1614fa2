package scheduler_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

func TestReadBatchDefaults(t *testing.T) {
	in := `{"kind":"exec","argv":["true"]}

{"id":"named","kind":"exec","shell":"echo hi","v":1,"attempt":1}
`
	b, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: "flag-batch"})
	require.NoError(t, err)
	require.Equal(t, "flag-batch", b.ID)
	require.Len(t, b.Tasks, 2)
	// The missing id is the line number; the blank line 2 still counts.
	require.Equal(t, "1", b.Tasks[0].ID)
	require.Equal(t, "named", b.Tasks[1].ID)
	for _, task := range b.Tasks {
		require.Equal(t, messages.Version, task.V)
		require.Equal(t, 1, task.Attempt)
		require.Equal(t, "flag-batch", task.Batch)
	}
}

func TestReadBatchNaming(t *testing.T) {
	tests := []struct {
		name, in, flag, want string
	}{
		{"flag", jsonl(2), "mine", "mine"},
		{"from a line", `{"kind":"exec","argv":["a"]}` + "\n" + `{"batch":"inline","kind":"exec","argv":["b"]}`, "", "inline"},
		{"flag equals lines", `{"batch":"same","kind":"exec","argv":["a"]}`, "same", "same"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := scheduler.ReadBatch(strings.NewReader(tt.in), scheduler.BatchOptions{Batch: tt.flag})
			require.NoError(t, err)
			require.Equal(t, tt.want, b.ID)
		})
	}
	t.Run("digest names are stable and content-bound", func(t *testing.T) {
		a, err := scheduler.ReadBatch(strings.NewReader(jsonl(3)), scheduler.BatchOptions{})
		require.NoError(t, err)
		again, err := scheduler.ReadBatch(strings.NewReader(jsonl(3)), scheduler.BatchOptions{})
		require.NoError(t, err)
		other, err := scheduler.ReadBatch(strings.NewReader(jsonl(4)), scheduler.BatchOptions{})
		require.NoError(t, err)
		require.Regexp(t, `^b-[0-9a-f]{16}$`, a.ID)
		require.Equal(t, a.ID, again.ID)
		require.NotEqual(t, a.ID, other.ID)
	})
}

func TestReadBatchRefusesWithLineNumbers(t *testing.T) {
	good := `{"kind":"exec","argv":["true"]}`
	tests := []struct {
		name string
		bad  string // placed on line 3, after two good lines
		flag string
		want error
	}{
		{"malformed json", `{"kind":`, "", messages.ErrMalformed},
		{"unknown field", `{"kind":"exec","argv":["x"],"agrv":["y"]}`, "", messages.ErrMalformed},
		{"trailing data", good + ` {}`, "", messages.ErrMalformed},
		{"unknown kind", `{"kind":"launch","argv":["x"]}`, "", messages.ErrUnknownKind},
		{"negative limit", `{"kind":"exec","argv":["x"],"limits":{"memory_bytes":-1}}`, "", messages.ErrInvalidField},
		{"NUL in argv", `{"kind":"exec","argv":["a\u0000b"]}`, "", messages.ErrNULByte},
		{"path traversal", `{"kind":"exec","argv":["x"],"files":{"../etc/passwd":"x"}}`, "", messages.ErrPathTraversal},
		{"bad utf8", "{\"kind\":\"exec\",\"argv\":[\"\xff\"]}", "", messages.ErrInvalidUTF8},
		{"oversize", `{"kind":"verify","profile":"coq","verify":{"theorem":"x","statement":"True","proof":"` + strings.Repeat("a", messages.MaxTaskBytes) + `"}}`, "", messages.ErrTooLarge},
		{"later attempt", `{"kind":"exec","argv":["x"],"attempt":2}`, "", messages.ErrInvalidField},
		{"duplicate id", `{"id":"1","kind":"exec","argv":["x"]}`, "", messages.ErrContradictory},
		{"other batch than flag", `{"batch":"other","kind":"exec","argv":["x"]}`, "flagged", messages.ErrContradictory},
		{"bad batch id", `{"batch":"a.b.c","kind":"exec","argv":["x"]}`, "", messages.ErrInvalidField},
		{"reply to another batch's result", `{"kind":"exec","argv":["x"],"reply":"warren.results.V.1.v1"}`, "", messages.ErrReplyForbidden},
		{"reply to the cancel bucket", `{"kind":"exec","argv":["x"],"reply":"$KV.warren_cancel.V.1"}`, "", messages.ErrReplyForbidden},
		{"secret also in env", `{"kind":"exec","argv":["x"],"env":{"K":"1"},"secrets":{"K":"2"}}`, "", messages.ErrContradictory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := good + "\n" + good + "\n" + tt.bad + "\n" + good + "\n"
			b, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: tt.flag})
			require.Nil(t, b)
			var be *scheduler.BatchError
			require.ErrorAs(t, err, &be)
			require.Len(t, be.Errors, 1, "%v", err)
			require.Equal(t, 3, be.Errors[0].Line)
			require.ErrorIs(t, err, tt.want)
			require.Contains(t, err.Error(), "line 3:")
			if tt.want == messages.ErrInvalidUTF8 {
				require.Contains(t, err.Error(), "argv[0]", "the field that is not UTF-8 is named")
			}
		})
	}
}

func TestReadBatchListsEveryProblemUpToTheCap(t *testing.T) {
	in := strings.Repeat("not json\n", 30)
	_, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{MaxErrors: 5})
	var be *scheduler.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Errors, 30, "every problem is kept")
	for i, le := range be.Errors {
		require.Equal(t, i+1, le.Line)
	}
	require.Equal(t, 5+1, strings.Count(err.Error(), "\n  "), "the message lists the cap, then says how many more")
	require.Contains(t, err.Error(), "... and 25 more")
	var all strings.Builder
	_, werr := be.WriteTo(&all)
	require.NoError(t, werr)
	require.Equal(t, 30, strings.Count(all.String(), "\n"))
}

// Problems found in different passes (decoding, then validation) are
// reported in line order, not pass order.
func TestReadBatchErrorsInLineOrder(t *testing.T) {
	in := `{"kind":"exec","argv":["a"],"env":{"HOME":"x"}}
not json
{"kind":"exec"}
{"kind":"exec","argv":["b"],"bogus":1}
`
	_, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{})
	var be *scheduler.BatchError
	require.ErrorAs(t, err, &be)
	var lines []int
	for _, le := range be.Errors {
		lines = append(lines, le.Line)
	}
	require.Equal(t, []int{1, 2, 3, 4}, lines)
}

func TestReadBatchEmpty(t *testing.T) {
	_, err := scheduler.ReadBatch(strings.NewReader("\n  \n"), scheduler.BatchOptions{})
	require.ErrorIs(t, err, scheduler.ErrEmptyBatch)
}

func FuzzReadBatch(f *testing.F) {
	f.Add([]byte(jsonl(2)), "")
	f.Add([]byte(`{"id":"a","batch":"b","kind":"exec","shell":"x"}`+"\n"+`{"id":"a","kind":"exec","argv":["y"]}`), "")
	f.Add([]byte(`{"kind":"verify","profile":"lean","verify":{"theorem":"t","statement":"True","proof":"trivial"}}`), "fb")
	f.Add([]byte("\xff\n{}\n\r\n"), "x")
	f.Fuzz(func(t *testing.T, data []byte, flag string) {
		b, err := scheduler.ReadBatch(strings.NewReader(string(data)), scheduler.BatchOptions{Batch: flag})
		if err != nil {
			var be *scheduler.BatchError
			if errors.As(err, &be) {
				for _, le := range be.Errors {
					require.Positive(t, le.Line)
				}
			}
			return
		}
		ids := map[string]bool{}
		for _, task := range b.Tasks {
			require.Equal(t, b.ID, task.Batch)
			require.False(t, ids[task.ID], "duplicate id %q accepted", task.ID)
			ids[task.ID] = true
			require.NoError(t, task.Validate())
		}
		if flag != "" {
			require.Equal(t, flag, b.ID)
		}
	})
}

// TestReadBatchNoCache: NoCache marks every verify task (not exec tasks)
// before the digest, so the derived batch id differs from the same input
// without it; the caller's tasks are not modified.
func TestReadBatchNoCache(t *testing.T) {
	in := `{"kind":"verify","profile":"coq","verify":{"theorem":"t","statement":"True","proof":"Theorem t : True. Proof. exact I. Qed."}}
{"kind":"exec","argv":["true"]}
`
	plain, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{})
	require.NoError(t, err)
	require.False(t, plain.Tasks[0].Verify.NoCache)
	fresh, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{NoCache: true})
	require.NoError(t, err)
	require.True(t, fresh.Tasks[0].Verify.NoCache)
	require.Nil(t, fresh.Tasks[1].Verify)
	require.NotEqual(t, plain.ID, fresh.ID, "with and without --no-cache are two batches")

	tasks := []messages.Task{plain.Tasks[0]}
	tasks[0].Batch = ""
	b, err := scheduler.NewBatch(tasks, scheduler.BatchOptions{NoCache: true})
	require.NoError(t, err)
	require.True(t, b.Tasks[0].Verify.NoCache)
	require.False(t, tasks[0].Verify.NoCache, "the caller's spec is not modified")
}
