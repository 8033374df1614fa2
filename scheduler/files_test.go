package scheduler_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// TestFetchFilesStaysBeneathDir: a listed file lands at DIR/<id>/<path>
// (the control); names that would leave DIR, by "..", an absolute path or
// a symlink already in DIR, are refused and nothing is written outside.
func TestFetchFilesStaysBeneathDir(t *testing.T) {
	x := setup(t)
	obs, err := x.b.JS.ObjectStore(x.ctx, messages.BucketOutputs)
	require.NoError(t, err)
	data := []byte("payload\n")
	_, err = obs.PutBytes(x.ctx, "fb.1.t1.1-1.file0", data)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	file := func(p string) messages.OutputFile {
		return messages.OutputFile{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Object: "fb.1.t1.1-1.file0"}
	}
	res := func(id string, f messages.OutputFile) *messages.Result {
		return &messages.Result{TaskID: id, Batch: "fb", Attempt: 1, Files: []messages.OutputFile{f}}
	}

	dir, outside := t.TempDir(), t.TempDir()
	require.NoError(t, x.c.FetchFiles(x.ctx, res("t1", file("sub/a.txt")), dir))
	got, err := os.ReadFile(filepath.Join(dir, "t1", "sub", "a.txt"))
	require.NoError(t, err)
	require.Equal(t, data, got)

	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "t2")))
	for name, r := range map[string]*messages.Result{
		"dotdot":         res("t1", file("../../escaped")),
		"absolute":       res("t1", file(filepath.Join(outside, "escaped"))),
		"symlink in dir": res("t2", file("escaped")),
		"bad checksum":   res("t3", messages.OutputFile{Path: "x", Size: 1, SHA256: "00", Object: "fb.1.t1.1-1.file0"}),
	} {
		require.Error(t, x.c.FetchFiles(x.ctx, r, dir), name)
	}
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, ents, "nothing written outside DIR")
	_, err = os.Stat(filepath.Join(dir, "t3"))
	require.ErrorIs(t, err, os.ErrNotExist, "a file that does not match its checksum is not written")
}
