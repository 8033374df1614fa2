package scheduler_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// Inputs too large for a task message are moved to input objects, the
// largest first, until the task fits; Publish stores their content in
// the batch's inputs store before the first task, byte for byte; the
// batch's digest covers the content.
func TestLargeInputsGoToTheObjectStore(t *testing.T) {
	x := setup(t)
	stdin, big := randomBytes(t, 2<<20), randomBytes(t, 3<<20)
	files := map[string]messages.Bytes{"big.bin": big, "small.txt": messages.Bytes("hello")}
	task := messages.Task{ID: "t", Kind: messages.KindExec, Argv: []string{"cat"}, Stdin: stdin, Files: files}
	b, err := scheduler.NewBatch([]messages.Task{task}, scheduler.BatchOptions{Batch: "inputs"})
	require.NoError(t, err)
	got := b.Tasks[0]
	require.Empty(t, got.Stdin)
	require.NotNil(t, got.StdinObject)
	require.Equal(t, messages.NewInputObject(stdin), *got.StdinObject)
	require.Equal(t, map[string]messages.InputObject{"big.bin": messages.NewInputObject(big)}, got.FilesObjects)
	require.Equal(t, map[string]messages.Bytes{"small.txt": messages.Bytes("hello")}, got.Files, "small content stays inline")
	require.Len(t, files, 2, "the caller's files are not modified")

	_, err = x.c.Publish(x.ctx, b)
	require.NoError(t, err)
	obs, err := x.b.JS.ObjectStore(x.ctx, messages.BucketInputs)
	require.NoError(t, err)
	for _, want := range [][]byte{stdin, big} {
		ref := messages.NewInputObject(want)
		data, err := obs.GetBytes(x.ctx, ref.Name)
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		require.Equal(t, ref.SHA256, hex.EncodeToString(sum[:]))
		require.Equal(t, want, data)
	}
	msgs := x.storedTasks(t, "inputs")
	require.Len(t, msgs, 1)
	require.Less(t, len(msgs[0].Data()), 64<<10, "the task message carries references, not content")
	decoded, err := messages.DecodeTask(msgs[0].Data())
	require.NoError(t, err)
	require.Equal(t, got.FilesObjects, decoded.FilesObjects)

	// The digest covers the content: one byte changed is another batch.
	changed := append([]byte(nil), big...)
	changed[len(changed)/2] ^= 1
	task.Files = map[string]messages.Bytes{"big.bin": changed, "small.txt": messages.Bytes("hello")}
	other, err := scheduler.NewBatch([]messages.Task{task}, scheduler.BatchOptions{Batch: "inputs"})
	require.NoError(t, err)
	require.NotEqual(t, b.Digest, other.Digest)
	_, err = x.c.Publish(x.ctx, other)
	require.ErrorIs(t, err, scheduler.ErrBatchConflict)
}

// A task that fits keeps its inputs inline.
func TestSmallInputsStayInline(t *testing.T) {
	task := messages.Task{ID: "t", Kind: messages.KindExec, Argv: []string{"cat"}, Stdin: randomBytes(t, 100<<10)}
	b, err := scheduler.NewBatch([]messages.Task{task}, scheduler.BatchOptions{Batch: "small"})
	require.NoError(t, err)
	require.Nil(t, b.Tasks[0].StdinObject)
	require.Len(t, b.Tasks[0].Stdin, 100<<10)
}
