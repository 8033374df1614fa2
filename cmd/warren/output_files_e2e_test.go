package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// TestE2EOutputFilesComeBackByteIdentical: a sandboxed task writes two
// files and a symlink to /etc/passwd; the files come back byte-identical
// through `warren results --files`, the symlink is refused and reported,
// and nothing of /etc/passwd is stored. Two more tasks hit and stay under
// their disk limit.
func TestE2EOutputFilesComeBackByteIdentical(t *testing.T) {
	e := newE2E(t)
	// Sandbox uids of a root worker must reach the scratch root
	// (t.TempDir's parent is 0700).
	root, err := os.MkdirTemp("", "warren-e2e-outputs-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o711))
	e.startWorker(t, 1, "--isolation", "auto", "--scratch-root", root)
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	task := `{"id":"o1","kind":"exec","shell":"printf 'hello\\n' > a.txt; mkdir sub; seq 1 20000 > sub/b.txt; ln -s /etc/passwd link.txt; ln -s /etc ldir","outputs":["*.txt","sub/*","missing","ldir/passwd","l*/*"]}` + "\n" +
		// The disk limit through the whole stack: 3 x 100 MiB against 200 MiB
		// fails with disk_full; the control under 400 MiB succeeds.
		`{"id":"full","kind":"exec","shell":"for i in 1 2 3; do dd if=/dev/zero of=f$i bs=1M count=100 status=none || exit 3; done","limits":{"disk_bytes":209715200}}` + "\n" +
		`{"id":"room","kind":"exec","shell":"for i in 1 2 3; do dd if=/dev/zero of=f$i bs=1M count=100 status=none || exit 3; done","limits":{"disk_bytes":419430400}}` + "\n"
	file := filepath.Join(t.TempDir(), "batch.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(task), 0o644))
	_, stderr, code := e.run(t, "submit", file, "--batch", "of", "--wait")
	require.Equal(t, 0, code, stderr)

	dir := t.TempDir()
	out, stderr, code := e.run(t, "results", "of", "--files", dir)
	require.Equal(t, 0, code, stderr)
	all := parseResults(t, out)
	require.Equal(t, messages.StatusFailed, all["full"].Status, string(all["full"].Stderr))
	require.True(t, all["full"].DiskFull)
	require.Contains(t, string(all["full"].Stderr), "No space left on device")
	require.Equal(t, messages.StatusOK, all["room"].Status, string(all["room"].Stderr))
	require.False(t, all["room"].DiskFull)
	r := all["o1"]
	require.NotNil(t, r, out)
	require.Equal(t, messages.StatusOK, r.Status, string(r.Stderr))
	require.NotEqual(t, "none (insecure)", r.Sandbox, "the task ran in a sandbox")
	var paths []string
	for _, f := range r.Files {
		paths = append(paths, f.Path)
		require.Len(t, f.SHA256, 64)
		require.NotEmpty(t, f.Object)
	}
	require.Equal(t, []string{"a.txt", "sub/b.txt"}, paths)
	// Each once, however many patterns match: the symlinked file, and the
	// symlinked directory that "ldir/passwd" and "l*/*" would walk through.
	require.Equal(t, []messages.RefusedFile{{Path: "link.txt", Reason: "symlink"}, {Path: "ldir", Reason: "symlink"}}, r.FilesRefused)

	got, err := os.ReadFile(filepath.Join(dir, "o1", "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(got))
	got, err = os.ReadFile(filepath.Join(dir, "o1", "sub", "b.txt"))
	require.NoError(t, err)
	require.Equal(t, want.String(), string(got))
	_, err = os.Lstat(filepath.Join(dir, "o1", "link.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "the refused symlink is not written")
}
