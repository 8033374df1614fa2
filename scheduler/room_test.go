package scheduler_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// limitTasks sets WARREN_TASKS's max_bytes and max_msgs (-1: none).
func (x *bundle) limitTasks(t *testing.T, maxBytes, maxMsgs int64) {
	t.Helper()
	s, err := x.b.JS.Stream(x.ctx, messages.StreamTasks)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxBytes, cfg.MaxMsgs = maxBytes, maxMsgs
	_, err = x.b.JS.UpdateStream(x.ctx, cfg)
	require.NoError(t, err)
}

func (x *bundle) taskState(t *testing.T) jetstream.StreamState {
	t.Helper()
	s, err := x.b.JS.Stream(x.ctx, messages.StreamTasks)
	require.NoError(t, err)
	info, err := s.Info(x.ctx)
	require.NoError(t, err)
	return info.State
}

func (x *bundle) requireNoManifest(t *testing.T, batch string) {
	t.Helper()
	_, err := x.c.Manifest(x.ctx, batch)
	require.ErrorIs(t, err, scheduler.ErrUnknownBatch, "no manifest is left behind")
}

// A batch larger than the room left is refused whole: nothing in the
// stream, no manifest, an error naming the stream, the need, the room and
// the fixes. The control, a batch that fits, publishes.
func TestPublishRefusesBatchWithoutRoom(t *testing.T) {
	x := setup(t)
	x.limitTasks(t, 64<<10, -1)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 2000, "huge"))
	var full *broker.StoreFullError
	require.ErrorAs(t, err, &full)
	require.ErrorIs(t, err, broker.ErrNoRoom)
	require.Equal(t, messages.StreamTasks, full.Stream)
	require.NotNil(t, full.Room)
	require.EqualValues(t, 2000, full.Room.NeedMsgs)
	require.EqualValues(t, 64<<10, full.Room.FreeBytes)
	require.EqualValues(t, -1, full.Room.FreeMsgs)
	for _, want := range []string{"stream WARREN_TASKS has no room for batch huge", "nothing was published", "2000 messages",
		"warren setup --max-bytes WARREN_TASKS=SIZE", "split the batch", "max_age", "purge", "submitting the same batch again resumes it"} {
		require.Contains(t, err.Error(), want)
	}
	require.Zero(t, x.taskState(t).Msgs, "nothing published")
	x.requireNoManifest(t, "huge")

	// The control: a batch that fits.
	rep, err := x.c.Publish(x.ctx, mustBatch(t, 20, "fits"))
	require.NoError(t, err)
	require.Equal(t, 20, rep.Stored)
	x.requireComplete(t, "fits", 20)
}

// The room a batch needs is what the stream counts once it is stored:
// a stream with exactly that room left takes it, one byte less refuses it.
func TestRoomNeededIsWhatTheStreamCounts(t *testing.T) {
	x := setup(t)
	b := mustBatch(t, 50, "exact")
	need := scheduler.RoomNeed(b)
	x.limitTasks(t, need-1, -1)
	_, err := x.c.Publish(x.ctx, b)
	require.ErrorIs(t, err, broker.ErrNoRoom)
	require.Zero(t, x.taskState(t).Msgs)

	x.limitTasks(t, need, -1)
	_, err = x.c.Publish(x.ctx, mustBatch(t, 50, "exact"))
	require.NoError(t, err)
	require.EqualValues(t, need, x.taskState(t).Bytes, "the estimate is the file store's count")
}

// max_msgs counts too.
func TestPublishRefusesBatchOverMaxMsgs(t *testing.T) {
	x := setup(t)
	x.limitTasks(t, -1, 30)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 20, "first"))
	require.NoError(t, err)
	_, err = x.c.Publish(x.ctx, mustBatch(t, 11, "second"))
	var full *broker.StoreFullError
	require.ErrorAs(t, err, &full)
	require.EqualValues(t, 10, full.Room.FreeMsgs)
	require.EqualValues(t, 11, full.Room.NeedMsgs)
	require.ErrorContains(t, err, "10 messages left")
	x.requireNoManifest(t, "second")
	_, err = x.c.Publish(x.ctx, mustBatch(t, 10, "third"))
	require.NoError(t, err)
}

// Another publisher fills the stream between the room check and the
// publication: the publication stops, the manifest stays incomplete, the
// error says to submit again, and submitting again (once there is room)
// resumes it, publishing only the rest.
func TestPublishStoppedByAFullStreamResumes(t *testing.T) {
	x := setup(t)
	x.limitTasks(t, -1, 10)
	c, err := scheduler.New(x.b.Conn, scheduler.Config{MaxInflight: 1})
	require.NoError(t, err)
	filler := mustBatch(t, 5, "filler")
	c.SetAfterRoomCheck(func() {
		_, err := x.c.Publish(x.ctx, filler)
		require.NoError(t, err)
	})
	_, err = c.Publish(x.ctx, mustBatch(t, 8, "racing"))
	var full *broker.StoreFullError
	require.ErrorAs(t, err, &full)
	require.NotNil(t, full.Stopped)
	require.Equal(t, "racing", full.Stopped.Batch)
	require.Equal(t, 5, full.Stopped.Stored)
	require.ErrorContains(t, err, "submitting the same batch again resumes it")
	m, err := x.c.Manifest(x.ctx, "racing")
	require.NoError(t, err)
	a, _ := m.Attempt(1)
	require.False(t, a.Complete)

	c.SetAfterRoomCheck(nil)
	s, err := x.b.JS.Stream(x.ctx, messages.StreamTasks)
	require.NoError(t, err)
	require.NoError(t, s.Purge(x.ctx, jetstream.WithPurgeSubject(messages.BatchTaskFilter("filler"))))
	rep, err := c.Publish(x.ctx, mustBatch(t, 8, "racing"))
	require.NoError(t, err)
	require.Equal(t, 5, rep.Skipped)
	require.Equal(t, 3, rep.Stored)
	x.requireComplete(t, "racing", 8)
}
