package scheduler_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

func TestSplitIDsKeepsOrderAndBounds(t *testing.T) {
	scheduler.SetIDChunking(t, 40, 64)
	short := []string{"a", "b", "c"}
	require.Nil(t, scheduler.SplitIDs(short), "a few ids stay in the manifest")
	var ids []string
	for i := range 100 {
		ids = append(ids, strconv.Itoa(i))
	}
	chunks := scheduler.SplitIDs(ids)
	require.Greater(t, len(chunks), 1)
	var joined []string
	for _, c := range chunks {
		data, err := json.Marshal(c)
		require.NoError(t, err)
		require.LessOrEqual(t, len(data), 64)
		joined = append(joined, c...)
	}
	require.Equal(t, ids, joined)
}

func (x *bundle) batchKeys(t *testing.T) []string {
	t.Helper()
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketBatches)
	require.NoError(t, err)
	lister, err := kv.ListKeys(x.ctx)
	require.NoError(t, err)
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	return keys
}

// A batch with more ids than a manifest holds keeps them in chunks of its
// bucket, which every reader loads: a collection counts exactly the
// batch's ids (and refuses a foreign one), a cancel finds a task, a
// conflict names the id that differs, a replay of the same tasks shares
// them.
func TestLargeBatchIDsInChunks(t *testing.T) {
	scheduler.SetIDChunking(t, 64, 256)
	x := setup(t)
	const n = 500
	b := mustBatch(t, n, "big")
	_, err := x.c.Publish(x.ctx, b)
	require.NoError(t, err)
	m, err := x.c.Manifest(x.ctx, "big")
	require.NoError(t, err)
	a, _ := m.Attempt(1)
	require.Empty(t, a.IDs)
	require.Greater(t, a.IDChunks, 10)
	keys := x.batchKeys(t)
	require.Len(t, keys, 1+a.IDChunks)
	require.Contains(t, keys, messages.IDChunkKey("big", b.Digest, a.IDChunks-1))

	x.storeResult(t, "big", 1, "stranger", messages.StatusOK, 0)
	for i := 1; i <= n; i++ {
		x.storeResult(t, "big", 1, strconv.Itoa(i), messages.StatusOK, 0)
	}
	rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "big"})
	require.NoError(t, err)
	require.Equal(t, n, rep.Received)
	require.True(t, rep.Complete())
	require.Len(t, rep.Foreign, 1, "an id outside the chunks is not counted")
	require.Equal(t, "stranger", rep.Foreign[0].TaskID)

	require.NoError(t, x.c.Cancel(x.ctx, "big", 1, "250", "test"))
	require.ErrorIs(t, x.c.Cancel(x.ctx, "big", 1, "nope", "test"), scheduler.ErrUnknownTask)

	_, err = x.c.Publish(x.ctx, mustBatch(t, n+1, "big"))
	require.ErrorIs(t, err, scheduler.ErrBatchConflict)
	require.ErrorContains(t, err, fmt.Sprintf(`task "%d" is not among the %d stored`, n+1, n))
	require.Len(t, x.batchKeys(t), 1+a.IDChunks, "the conflicting batch's ids are not left behind")

	rr, err := x.c.Replay(x.ctx, scheduler.ReplayOptions{Batch: "big"})
	require.NoError(t, err)
	m, err = x.c.Manifest(x.ctx, "big")
	require.NoError(t, err)
	a2, _ := m.Attempt(rr.Attempt)
	require.Equal(t, a.IDChunks, a2.IDChunks, "a replay of the same tasks shares their ids")
	require.Len(t, x.batchKeys(t), 1+a.IDChunks)
}

// A batch refused before its first task (no room) leaves neither its
// manifest nor its id chunks.
func TestRefusedLargeBatchLeavesNoIDs(t *testing.T) {
	scheduler.SetIDChunking(t, 64, 256)
	x := setup(t)
	x.limitTasks(t, 16<<10, -1)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 500, "nope"))
	require.ErrorIs(t, err, broker.ErrNoRoom)
	require.Empty(t, x.batchKeys(t))
}

// A manifest whose chunk is gone (expired first) is read without an id
// check, with a warning, rather than never completing.
func TestCollectWithIDChunkGone(t *testing.T) {
	scheduler.SetIDChunking(t, 64, 256)
	x := setup(t)
	b := mustBatch(t, 100, "gone")
	_, err := x.c.Publish(x.ctx, b)
	require.NoError(t, err)
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketBatches)
	require.NoError(t, err)
	require.NoError(t, kv.Purge(x.ctx, messages.IDChunkKey("gone", b.Digest, 0)))
	for i := 1; i <= 100; i++ {
		x.storeResult(t, "gone", 1, strconv.Itoa(i), messages.StatusOK, 0)
	}
	rep, err := x.c.Collect(x.ctx, scheduler.CollectOptions{Batch: "gone"})
	require.NoError(t, err)
	require.True(t, rep.Complete())
}

// No id chunk key is a batch's manifest key: chunk keys have four tokens
// or more, batch ids one or two.
func TestIDChunkKeysNeverABatchID(t *testing.T) {
	for _, batch := range []string{"b", "t.b", "ids", "t.ids"} {
		key := messages.IDChunkKey(batch, strings.Repeat("a", 64), 0)
		_, err := scheduler.NewBatch([]messages.Task{{Kind: messages.KindExec, Shell: "true"}}, scheduler.BatchOptions{Batch: key})
		require.Error(t, err, key)
		_, err = scheduler.NewBatch([]messages.Task{{Kind: messages.KindExec, Shell: "true"}}, scheduler.BatchOptions{Batch: key[strings.Index(key, ".")+1:], Tenant: "t"})
		require.Error(t, err, key)
	}
}
