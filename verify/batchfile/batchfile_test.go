package batchfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
)

func writeTemp(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestLoadBatchJSONL(t *testing.T) {
	t.Parallel()
	good := `{"id":"a","theorem":"t","statement":"True","proof":"Theorem t : True. exact I. Qed."}`
	tests := []struct {
		name      string
		content   string
		wantIDs   []string
		wantProf  []string
		wantLine  int
		wantInMsg string
	}{
		{name: "one line", content: good + "\n", wantIDs: []string{"a"}, wantProf: []string{"coq"}},
		{name: "blank lines and per-line profile", content: "\n" + good + "\n\n" +
			`{"id":"b","theorem":"M.t","statement":"True","proof":"p","profile":"coq-classical","header":"Require Import List."}` + "\n",
			wantIDs: []string{"a", "b"}, wantProf: []string{"coq", "coq-classical"}},
		{name: "no trailing newline", content: good, wantIDs: []string{"a"}, wantProf: []string{"coq"}},
		{name: "empty file", content: "\n\n", wantInMsg: "no proofs"},
		{name: "not json", content: good + "\nnot json\n", wantLine: 2, wantInMsg: "not a JSON object"},
		{name: "unknown field", content: `{"id":"a","theorem":"t","statement":"s","proof":"p","prof":"x"}`, wantLine: 1, wantInMsg: "unknown field"},
		{name: "wrong type", content: `{"id":1,"theorem":"t","statement":"s","proof":"p"}`, wantLine: 1, wantInMsg: `"id" must be a string`},
		{name: "missing statement", content: `{"id":"a","theorem":"t","proof":"p"}`, wantLine: 1, wantInMsg: `"statement"`},
		{name: "missing proof", content: "\n" + `{"id":"a","theorem":"t","statement":"s"}`, wantLine: 2, wantInMsg: `"proof"`},
		{name: "bad id", content: `{"id":"a b","theorem":"t","statement":"s","proof":"p"}`, wantLine: 1, wantInMsg: `"id"`},
		{name: "bad theorem", content: `{"id":"a","theorem":"t..u","statement":"s","proof":"p"}`, wantLine: 1, wantInMsg: `"theorem"`},
		{name: "bad profile", content: `{"id":"a","theorem":"t","statement":"s","proof":"p","profile":"Coq_X"}`, wantLine: 1, wantInMsg: `"profile"`},
		{name: "duplicate id", content: good + "\n" + good + "\n", wantLine: 2, wantInMsg: "used twice"},
		{name: "two objects on a line", content: good + good, wantLine: 1, wantInMsg: "more than one JSON value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tasks, err := Load(writeTemp(t, "batch.jsonl", tc.content), "coq")
			if tc.wantInMsg != "" {
				var be *Error
				require.True(t, errors.As(err, &be), "got %v", err)
				require.Equal(t, tc.wantLine, be.Line)
				require.Contains(t, be.Error(), tc.wantInMsg)
				return
			}
			require.NoError(t, err)
			require.Len(t, tasks, len(tc.wantIDs))
			for i, task := range tasks {
				require.Equal(t, tc.wantIDs[i], task.ID)
				require.Equal(t, tc.wantProf[i], task.Profile)
				require.Equal(t, messages.KindVerify, task.Kind)
				require.NotEmpty(t, task.Verify.Proof)
			}
		})
	}
}

func TestLoadBatchDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		files     map[string]string
		wantIDs   []string
		wantInMsg string
	}{
		{name: "proof and json", files: map[string]string{
			"b.v": "Theorem t : True. exact I. Qed.", "b.json": `{"theorem":"t","statement":"True"}`,
			"a.lean": "theorem t : True := trivial", "a.json": `{"theorem":"t","statement":"True","profile":"lean"}`,
			"README.md": "ignored",
		}, wantIDs: []string{"a", "b"}},
		{name: "batch.jsonl wins", files: map[string]string{
			"batch.jsonl": `{"id":"x","theorem":"t","statement":"s","proof":"p"}`, "b.v": "p",
		}, wantIDs: []string{"x"}},
		{name: "proof without json", files: map[string]string{"a.v": "p"}, wantInMsg: "missing a.json"},
		{name: "json without proof", files: map[string]string{"a.json": `{"theorem":"t","statement":"s"}`}, wantInMsg: "no proof file"},
		{name: "two proofs one id", files: map[string]string{"a.v": "p", "a.lean": "p", "a.json": `{"theorem":"t","statement":"s"}`}, wantInMsg: "two proofs"},
		{name: "id mismatch", files: map[string]string{"a.v": "p", "a.json": `{"id":"b","theorem":"t","statement":"s"}`}, wantInMsg: "differs from the file name"},
		{name: "proof in json", files: map[string]string{"a.v": "p", "a.json": `{"theorem":"t","statement":"s","proof":"q"}`}, wantInMsg: "proof belongs in a.v"},
		{name: "empty dir", files: map[string]string{}, wantInMsg: "no proofs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for n, c := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644))
			}
			tasks, err := Load(dir, "coq")
			if tc.wantInMsg != "" {
				var be *Error
				require.True(t, errors.As(err, &be), "got %v", err)
				require.Contains(t, be.Error(), tc.wantInMsg)
				return
			}
			require.NoError(t, err)
			var ids []string
			for _, task := range tasks {
				ids = append(ids, task.ID)
			}
			require.Equal(t, tc.wantIDs, ids)
		})
	}
}

func TestLoadBatchExamples(t *testing.T) {
	t.Parallel()
	tasks, err := Load(filepath.Join("..", "..", "examples", "coq", "batch.jsonl"), "coq")
	require.NoError(t, err)
	require.NotEmpty(t, tasks)
}

// FuzzLoadBatch: any input either loads into tasks that validate, or is
// refused with a *Error; never a panic.
func FuzzLoadBatch(f *testing.F) {
	f.Add(`{"id":"a","theorem":"t","statement":"True","proof":"p"}`)
	f.Add("\n\n{\"id\":\"a\"}\n")
	f.Add(`{"id":"a","theorem":"a.b","statement":"s","proof":"p","profile":"x","header":"h"}` + "\n" + `[1,2]`)
	f.Add(`{"id":"a","theorem":"t","statement":"\u0000","proof":"p"}`)
	f.Fuzz(func(t *testing.T, content string) {
		tasks, err := Load(writeTemp(t, "b.jsonl", content), "coq")
		if err != nil {
			var be *Error
			require.True(t, errors.As(err, &be), "error %v is not a *Error", err)
			return
		}
		for _, task := range tasks {
			task.Batch = "b"
			require.NoError(t, task.Validate())
		}
	})
}
