package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

func TestPublishStoresTasksWithProtocolHeaders(t *testing.T) {
	x := setup(t)
	b := mustBatch(t, 3, "hdr")
	rep, err := x.c.Publish(x.ctx, b)
	require.NoError(t, err)
	require.Equal(t, scheduler.PublishReport{Batch: "hdr", Attempt: 1, Total: 3, Stored: 3}, *rep)

	msgs := x.storedTasks(t, "hdr")
	require.Len(t, msgs, 3)
	for i, m := range msgs {
		id := strconv.Itoa(i + 1)
		require.Equal(t, messages.TaskSubject("default", "default", "hdr"), m.Subject())
		require.Equal(t, messages.MsgID("hdr", id, 1), m.Headers().Get(messages.HeaderMsgID))
		require.Equal(t, id, m.Headers().Get(messages.HeaderTaskID))
		require.Equal(t, "hdr", m.Headers().Get(messages.HeaderBatch))
		require.Equal(t, "1", m.Headers().Get(messages.HeaderAttempt))
		task, err := messages.DecodeTask(m.Data())
		require.NoError(t, err)
		require.Equal(t, 1, task.Attempt)
		require.Equal(t, id, task.ID)
	}
	x.requireComplete(t, "hdr", 3)
}

func TestPublishIsExactlyOnce(t *testing.T) {
	x := setup(t)
	const n = 300
	b := mustBatch(t, n, "")
	for i := range 3 {
		rep, err := x.c.Publish(x.ctx, mustBatch(t, n, ""))
		require.NoError(t, err)
		require.Equal(t, b.ID, rep.Batch)
		require.Equal(t, i > 0, rep.AlreadyComplete)
	}
	require.EqualValues(t, n, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter(b.ID)))
}

func TestPublishWithSmallWindowAndRetries(t *testing.T) {
	x := setup(t)
	c, err := scheduler.New(x.b.Conn, scheduler.Config{MaxInflight: 1})
	require.NoError(t, err)
	rep, err := c.Publish(x.ctx, mustBatch(t, 20, "w1"))
	require.NoError(t, err)
	require.Equal(t, 20, rep.Stored)
	require.EqualValues(t, 20, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("w1")))
}

// A publisher that crashed after the manifest and half the tasks: running
// the submission again queues only the rest, even without the stream's
// dedup window (the ids already stored are skipped, not re-sent).
func TestPublishResumesCrashedPublication(t *testing.T) {
	x := setup(t)
	b := mustBatch(t, 10, "crashy")
	m := messages.BatchManifest{V: messages.Version, Batch: "crashy"}
	m.SetAttempt(1, messages.AttemptManifest{Total: 10, Digest: b.Digest})
	data, err := json.Marshal(&m)
	require.NoError(t, err)
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketBatches)
	require.NoError(t, err)
	_, err = kv.Create(x.ctx, "crashy", data)
	require.NoError(t, err)
	for i := range 4 {
		task := b.Tasks[i]
		payload, err := json.Marshal(&task)
		require.NoError(t, err)
		h := nats.Header{}
		h.Set(messages.HeaderMsgID, messages.MsgID("crashy", task.ID, 1))
		h.Set(messages.HeaderTaskID, task.ID)
		h.Set(messages.HeaderBatch, "crashy")
		h.Set(messages.HeaderAttempt, "1")
		_, err = x.b.JS.PublishMsg(x.ctx, &nats.Msg{Subject: messages.TaskSubject("default", "default", "crashy"), Header: h, Data: payload})
		require.NoError(t, err)
	}
	rep, err := x.c.Publish(x.ctx, b)
	require.NoError(t, err)
	require.Equal(t, 4, rep.Skipped)
	require.Equal(t, 6, rep.Stored)
	require.EqualValues(t, 10, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("crashy")))
	got, err := x.c.Manifest(x.ctx, "crashy")
	require.NoError(t, err)
	a, _ := got.Attempt(1)
	require.True(t, a.Complete)
}

func TestPublishRefusesConflictingBatch(t *testing.T) {
	x := setup(t)
	_, err := x.c.Publish(x.ctx, mustBatch(t, 2, "same"))
	require.NoError(t, err)
	_, err = x.c.Publish(x.ctx, mustBatch(t, 3, "same"))
	require.ErrorIs(t, err, scheduler.ErrBatchConflict)
	require.ErrorContains(t, err, `task "3" is not among the 2 stored`)
	require.EqualValues(t, 2, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("same")))

	// The same ids with another body: refused, not dropped as a duplicate.
	other := mustBatch(t, 2, "same")
	other.Tasks[1].Argv = []string{"echo", "another body"}
	other, err = scheduler.NewBatch(other.Tasks, scheduler.BatchOptions{Batch: "same"})
	require.NoError(t, err)
	_, err = x.c.Publish(x.ctx, other)
	require.ErrorIs(t, err, scheduler.ErrBatchConflict)
	require.ErrorContains(t, err, `task "2" has another body than the one stored under its id`)
	// The control: the same batch again is no conflict.
	_, err = x.c.Publish(x.ctx, mustBatch(t, 2, "same"))
	require.NoError(t, err)
}

// The manifest is written without looking its bucket up: a broker whose
// bucket is missing still gets the lookup's error, which says what to do,
// and nothing is published.
func TestPublishWithoutTheBatchesBucketSaysSetUp(t *testing.T) {
	x := setup(t)
	require.NoError(t, x.b.JS.DeleteKeyValue(x.ctx, messages.BucketBatches))
	_, err := x.c.Publish(x.ctx, mustBatch(t, 2, "nobucket"))
	require.ErrorContains(t, err, "has the broker been set up?")
	require.ErrorIs(t, err, jetstream.ErrBucketNotFound)
	require.EqualValues(t, 0, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("nobucket")))
}

func TestInvalidBatchPublishesNothing(t *testing.T) {
	x := setup(t)
	in := jsonl(5) + `{"kind":"exec"}` + "\n"
	b, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: "bad"})
	require.ErrorIs(t, err, messages.ErrMissingField)
	require.Nil(t, b)
	require.Zero(t, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("bad")))
	_, err = x.c.Manifest(x.ctx, "bad")
	require.ErrorIs(t, err, scheduler.ErrUnknownBatch)
}

func TestNewBatchDoesNotModifyInput(t *testing.T) {
	in := []messages.Task{{Kind: messages.KindExec, Argv: []string{"true"}}}
	b, err := scheduler.NewBatch(in, scheduler.BatchOptions{Batch: "x"})
	require.NoError(t, err)
	require.Equal(t, "1", b.Tasks[0].ID)
	require.Empty(t, in[0].ID)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   scheduler.Config
		field string
	}{
		{"inflight", scheduler.Config{MaxInflight: -1}, "MaxInflight"},
		{"ack timeout", scheduler.Config{AckTimeout: -1}, "AckTimeout"},
		{"retry for", scheduler.Config{RetryFor: -1}, "RetryFor"},
		{"grace", scheduler.Config{EventGrace: -1}, "EventGrace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scheduler.New(nil, tt.cfg)
			require.ErrorContains(t, err, tt.field)
		})
	}
}

// A task under messages.MaxTaskBytes whose message, headers included, is
// over a stock server's 1 MiB max_payload refuses the whole batch before
// anything is written: no task, no manifest, and the same line again on a
// re-submission.
func TestPublishRefusesTaskOverMaxPayloadBeforeAnyWrite(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{MaxPayload: 1 << 20})
	c, err := scheduler.New(b.Conn, scheduler.Config{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x := &bundle{b: b, c: c, ctx: ctx}

	// The body alone fits the server by 50 bytes; its headers do not.
	small := `{"kind":"exec","argv":["echo","small"]}`
	// A verify task's proof stays in the message (an exec task's large
	// stdin or files would go to the inputs store).
	big := func(id string) string {
		t.Helper()
		skeleton := fmt.Sprintf(`{"v":1,"id":%q,"batch":"mp","attempt":1,"kind":"verify","profile":"coq","verify":{"theorem":"x","statement":"True","proof":""}}`, id)
		pad := strings.Repeat("x", 1<<20-50-len(skeleton))
		return fmt.Sprintf(`{"id":%q,"kind":"verify","profile":"coq","verify":{"theorem":"x","statement":"True","proof":%q}}`, id, pad)
	}
	in := small + "\n" + big("2") + "\n" + small[:len(small)-1] + `,"id":"3"}` + "\n" + big("4") + "\n"
	for range 2 {
		bt, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: "mp"})
		require.NoError(t, err, "the body is under MaxTaskBytes: validation alone accepts it")
		_, err = c.Publish(ctx, bt)
		var be *scheduler.BatchError
		require.ErrorAs(t, err, &be)
		require.Len(t, be.Errors, 2)
		require.Equal(t, 2, be.Errors[0].Line)
		require.Equal(t, 4, be.Errors[1].Line)
		require.ErrorIs(t, err, &messages.Error{Code: messages.CodeTooLarge})
		require.Contains(t, err.Error(), "max_payload of 1048576")
		require.EqualValues(t, 0, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("mp")), "nothing published")
		_, err = c.Manifest(ctx, "mp")
		require.ErrorIs(t, err, scheduler.ErrUnknownBatch, "no manifest written")
	}
}

// A stream max_msg_size below the server's max_payload is the limit.
func TestPublishRefusesTaskOverTheStreamsMaxMsgSize(t *testing.T) {
	x := setup(t)
	x.limitTaskMsgs(t, 4096)
	in := `{"kind":"exec","argv":["true"]}` + "\n" + `{"kind":"exec","argv":["cat"],"stdin":"` + strings.Repeat("x", 4096) + `"}` + "\n"
	b, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: "ms"})
	require.NoError(t, err)
	_, err = x.c.Publish(x.ctx, b)
	var be *scheduler.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Errors, 1)
	require.Equal(t, 2, be.Errors[0].Line)
	require.Contains(t, err.Error(), "over the max_msg_size of stream WARREN_TASKS of 4096 bytes")
	require.EqualValues(t, 0, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("ms")))
}

// A batch of one task (every exec) is not checked against the stream's
// max_msg_size ahead: no STREAM.INFO on its path. The stream's refusal of
// its only task is the same error, all or nothing: nothing stored, no
// manifest left. The control: the same task under the limit is stored.
func TestPublishOfOneTaskLeavesTheStreamsMaxMsgSizeToTheStream(t *testing.T) {
	x := setup(t)
	x.limitTaskMsgs(t, 4096)
	one := func(batch string, stdin int) *scheduler.Batch {
		in := `{"id":"big","kind":"exec","argv":["cat"],"stdin":"` + strings.Repeat("x", stdin) + `"}` + "\n"
		b, err := scheduler.ReadBatch(strings.NewReader(in), scheduler.BatchOptions{Batch: batch})
		require.NoError(t, err)
		return b
	}

	spy := apiSpy(t, x.b.URL, "$JS.API.STREAM.INFO.>")
	_, err := x.c.Publish(x.ctx, one("small", 100))
	require.NoError(t, err, "the control")
	require.Empty(t, spy.subjects(t, 0), "a batch of one looked the tasks stream up")
	require.EqualValues(t, 1, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("small")))

	_, err = x.c.Publish(x.ctx, one("big", 4096))
	require.ErrorIs(t, err, &messages.Error{Code: messages.CodeTooLarge})
	require.Contains(t, err.Error(), "over the max_msg_size of stream WARREN_TASKS of 4096 bytes")
	require.EqualValues(t, 0, x.streamMsgs(t, messages.StreamTasks, messages.BatchTaskFilter("big")), "nothing published")
	_, err = x.c.Manifest(x.ctx, "big")
	require.ErrorIs(t, err, scheduler.ErrUnknownBatch, "the manifest was left")
}

// A publication reads the task stream's info once (its limits and the
// room left, fresh for every publication); it writes its manifest
// without looking the bucket up, and marks it complete from the revision
// it created, without reading it back.
func TestPublishLooksUpOnceAndWritesTheManifestWithoutReading(t *testing.T) {
	x := setup(t)
	spy := apiSpy(t, x.b.URL, "$JS.API.>")
	_, err := x.c.Publish(x.ctx, mustBatch(t, 3, "looks"))
	require.NoError(t, err)
	got := spy.subjects(t, 1)
	require.Equal(t, []string{"$JS.API.STREAM.INFO.WARREN_TASKS"}, got)
	m, err := x.c.Manifest(x.ctx, "looks")
	require.NoError(t, err)
	a, ok := m.Attempt(1)
	require.True(t, ok)
	require.True(t, a.Complete)
	require.Equal(t, 3, a.Total)

	spy.reset(t) // the Manifest read above
	_, err = x.c.Publish(x.ctx, mustBatch(t, 2, "looks-again"))
	require.NoError(t, err)
	require.Equal(t, []string{"$JS.API.STREAM.INFO.WARREN_TASKS"}, spy.subjects(t, 1), "the second publication reads the room left, nothing else")
}

// The manifest changed between a publication's create and its update (a
// concurrent replay of the batch): the update, made from the revision it
// created, reads it again and keeps the other writer's change.
func TestManifestUpdateFromAStaleRevisionRereads(t *testing.T) {
	x := setup(t)
	created, rev, err := x.c.CreateManifest(x.ctx, "race", func(m *messages.BatchManifest) error {
		m.SetAttempt(1, messages.AttemptManifest{Total: 2})
		return nil
	})
	require.NoError(t, err)
	kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketBatches)
	require.NoError(t, err)
	other := *created
	other.Attempts = maps.Clone(created.Attempts)
	other.SetAttempt(2, messages.AttemptManifest{Total: 9})
	data, err := json.Marshal(&other)
	require.NoError(t, err)
	_, err = kv.Update(x.ctx, "race", data, rev)
	require.NoError(t, err)

	_, err = x.c.UpdateManifestFrom(x.ctx, "race", created, rev, func(m *messages.BatchManifest) error {
		a, _ := m.Attempt(1)
		a.Complete = true
		m.SetAttempt(1, a)
		return nil
	})
	require.NoError(t, err)
	m, err := x.c.Manifest(x.ctx, "race")
	require.NoError(t, err)
	a1, _ := m.Attempt(1)
	require.True(t, a1.Complete, "the update landed")
	a2, ok := m.Attempt(2)
	require.True(t, ok, "the other writer's change was kept")
	require.Equal(t, 9, a2.Total)
}

// A manifest removed (deleted or purged: a refused exec's, an operator's
// `nats kv del`) leaves a marker a create from revision 0 fails on: a
// batch published again under the id is written over it, at once. The
// control: the marker is there (a create from revision 0 is refused).
func TestPublishOverARemovedManifest(t *testing.T) {
	for _, remove := range []string{"delete", "purge"} {
		t.Run(remove, func(t *testing.T) {
			x := setup(t)
			kv, err := x.b.JS.KeyValue(x.ctx, messages.BucketBatches)
			require.NoError(t, err)
			_, err = x.c.Publish(x.ctx, mustBatch(t, 2, "gone"))
			require.NoError(t, err)
			if remove == "delete" {
				require.NoError(t, kv.Delete(x.ctx, "gone"))
			} else {
				require.NoError(t, kv.Purge(x.ctx, "gone"))
			}
			_, err = x.b.JS.PublishMsg(x.ctx, &nats.Msg{Subject: "$KV." + messages.BucketBatches + ".gone", Data: []byte("{}")},
				jetstream.WithExpectLastSequencePerSubject(0))
			require.Error(t, err, "the control: no marker is left")

			ctx, cancel := context.WithTimeout(x.ctx, 10*time.Second)
			defer cancel()
			rep, err := x.c.Publish(ctx, mustBatch(t, 3, "gone"))
			require.NoError(t, err)
			require.Equal(t, 3, rep.Total)
			x.requireComplete(t, "gone", 3)
		})
	}
}

// limitTaskMsgs sets WARREN_TASKS's max_msg_size, as an operator may.
func (x *bundle) limitTaskMsgs(t *testing.T, n int32) {
	t.Helper()
	s, err := x.b.JS.Stream(x.ctx, messages.StreamTasks)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = n
	_, err = x.b.JS.UpdateStream(x.ctx, cfg)
	require.NoError(t, err)
}

// requireComplete asserts batch's manifest has attempt 1 of total tasks,
// all published.
func (x *bundle) requireComplete(t *testing.T, batch string, total int) {
	t.Helper()
	m, err := x.c.Manifest(x.ctx, batch)
	require.NoError(t, err)
	a, ok := m.Attempt(1)
	require.True(t, ok)
	require.Equal(t, total, a.Total)
	require.True(t, a.Complete)
}
