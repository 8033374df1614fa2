package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// The secret of these tests: long enough not to occur by chance.
const secretValue = "tok-7f3a9c1e5b2d4068aa"

func poolKey(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateCurveKeys()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	return kp, pub
}

// secretTask prints its secret whole, split across two writes, to stderr,
// and proves it saw it with a digest the mask cannot know.
func secretTask(id string) messages.Task {
	return messages.Task{
		ID: id, Kind: messages.KindExec,
		Secrets: map[string]string{"API_TOKEN": secretValue},
		Shell: `printf 'token=%s\n' "$API_TOKEN"; printf '%s' "$API_TOKEN" | cut -c1-8 | tr -d '\n'; sleep 0.2; ` +
			`printf '%s\n' "$API_TOKEN" | cut -c9-; echo "$API_TOKEN" >&2; printf '%s' "$API_TOKEN" | sha256sum | cut -c1-64`,
	}
}

func secretDigest() string {
	sum := sha256.Sum256([]byte(secretValue))
	return hex.EncodeToString(sum[:])
}

func collectAttempt(t *testing.T, ctx context.Context, c *scheduler.Client, batch string, attempt int) map[string]*messages.Result {
	t.Helper()
	out := map[string]*messages.Result{}
	rep, err := c.Collect(ctx, scheduler.CollectOptions{Batch: batch, Attempt: attempt, OnResult: func(r *messages.Result) error {
		out[r.TaskID] = r
		return nil
	}})
	require.NoError(t, err)
	require.True(t, rep.Complete())
	return out
}

func TestSecretsReachTheTaskSealedAndMaskedNeverStored(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kp, pub := poolKey(t)
	logs := &syncbuf.Buffer{}
	w := startWorker(t, b, "w1", workerOpts{capacity: 2, sealKey: kp, logTo: logs})
	client, err := scheduler.New(b.Conn, scheduler.Config{PoolKeys: scheduler.StaticPoolKeys{"": pub}})
	require.NoError(t, err)
	events := make(chan *nats.Msg, 4096)
	sub, err := b.Conn.ChanSubscribe(messages.EventSubject("S", ">"), events)
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	require.NoError(t, b.Conn.Flush())

	batch, err := scheduler.NewBatch([]messages.Task{secretTask("s1")}, scheduler.BatchOptions{Batch: "S"})
	require.NoError(t, err)
	_, err = client.Publish(ctx, batch)
	require.NoError(t, err)
	wantStdout := "token=***\n***\n" + secretDigest() + "\n"
	r := collectAttempt(t, ctx, client, "S", 1)["s1"]
	require.Equal(t, messages.StatusOK, r.Status, "%+v", r.Error)
	require.Equal(t, wantStdout, string(r.Stdout), "the task saw the secret (digest) and its output is masked")
	require.Equal(t, "***\n", string(r.Stderr))

	// A replay republishes the stored, still sealed, body and the task
	// sees the secret again.
	rrep, err := client.Replay(ctx, scheduler.ReplayOptions{Batch: "S"})
	require.NoError(t, err)
	r2 := collectAttempt(t, ctx, client, "S", rrep.Attempt)["s1"]
	require.Equal(t, wantStdout, string(r2.Stdout))

	// Live events carry the masked output only.
	var streamed strings.Builder
	exits := 0
	for exits < 2 {
		select {
		case m := <-events:
			require.NotContains(t, string(m.Data), secretValue)
			ev, err := messages.DecodeEvent(m.Data)
			require.NoError(t, err)
			if ev.Type == messages.EventStdout && ev.Attempt == 1 {
				streamed.Write(ev.Data)
			}
			if ev.Terminal() {
				exits++
			}
		case <-time.After(30 * time.Second):
			t.Fatal("events of the two attempts did not end")
		}
	}
	require.Equal(t, wantStdout, streamed.String())

	// Every message of every stream and bucket, headers included.
	sawSealed := false
	var names []string
	for name := range b.JS.StreamNames(ctx).Name() {
		names = append(names, name)
	}
	require.Contains(t, names, "KV_"+messages.BucketBatches)
	forEachStored(t, b.JS, names, func(name string, m *jetstream.RawStreamMsg) {
		for k, vs := range m.Header {
			require.NotContains(t, k+strings.Join(vs, " "), secretValue, "stream %s seq %d header", name, m.Sequence)
		}
		sawSealed = sawSealed || bytes.Contains(m.Data, []byte(`"sealed_secrets"`))
	})
	require.True(t, sawSealed, "the task is stored, sealed")
	require.NotEmpty(t, logs.String())
	require.NotContains(t, logs.String(), secretValue, "worker logs")

	// And the broker's store directory, once everything is on disk.
	stop, cancelStop := context.WithTimeout(ctx, 10*time.Second)
	defer cancelStop()
	require.NoError(t, w.Stop(stop))
	b.Server.Stop()
	files, sealedOnDisk := 0, false
	require.NoError(t, filepath.WalkDir(b.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		require.NotContains(t, string(data), secretValue, p)
		sealedOnDisk = sealedOnDisk || bytes.Contains(data, []byte(`"sealed_secrets"`))
		return nil
	}))
	require.Positive(t, files)
	require.True(t, sealedOnDisk, "the store holds the sealed task in plain JSON, so the search would have seen a cleartext one")
}

func TestSecretsWithoutThePoolKeyGiveATypedErrorOnce(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, pub := poolKey(t)
	other, _ := poolKey(t)
	client, err := scheduler.New(b.Conn, scheduler.Config{PoolKeys: scheduler.StaticPoolKeys{"": pub}})
	require.NoError(t, err)
	// Submitting without a key is refused before anything is published.
	nokey, err := scheduler.New(b.Conn, scheduler.Config{})
	require.NoError(t, err)
	bad, err := scheduler.NewBatch([]messages.Task{secretTask("k")}, scheduler.BatchOptions{Batch: "nokey"})
	require.NoError(t, err)
	_, err = nokey.Publish(ctx, bad)
	require.ErrorIs(t, err, messages.ErrSecretsUnavailable)
	_, err = nokey.Manifest(ctx, "nokey")
	require.ErrorIs(t, err, scheduler.ErrUnknownBatch, "nothing was published")

	for name, key := range map[string]nkeys.KeyPair{"nokey": nil, "wrongkey": other} {
		t.Run(name, func(t *testing.T) {
			w := startWorker(t, b, "w-"+name, workerOpts{sealKey: key, maxDeliver: 5})
			batch, err := scheduler.NewBatch([]messages.Task{secretTask("s1")}, scheduler.BatchOptions{Batch: "K" + name})
			require.NoError(t, err)
			_, err = client.Publish(ctx, batch)
			require.NoError(t, err)
			r := collectAttempt(t, ctx, client, "K"+name, 1)["s1"]
			require.Equal(t, messages.StatusInfraError, r.Status)
			require.ErrorIs(t, r.Error, messages.ErrSecretsUnavailable)
			require.Equal(t, 1, r.Delivery, "not retried")
			require.Contains(t, r.Error.Msg, pub, "the error names the key the secrets need")
			dlq, err := b.JS.Stream(ctx, messages.StreamDLQ)
			require.NoError(t, err)
			subj := messages.DLQSubject("secrets", "K"+name, 1, "s1")
			info, err := dlq.Info(ctx, jetstream.WithSubjectFilter(subj))
			require.NoError(t, err)
			require.EqualValues(t, 1, info.State.Subjects[subj])
			stop, cancelStop := context.WithTimeout(ctx, 10*time.Second)
			defer cancelStop()
			require.NoError(t, w.Stop(stop))
			require.EqualValues(t, 1, w.Stats().Done)
		})
	}
}

func TestCleartextSecretsOnTheWireAreRefusedAndErased(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	startWorker(t, b, "w1", workerOpts{})
	task := shTask("C", "c1", "echo should not run")
	task.Secrets = map[string]string{"API_TOKEN": secretValue}
	publish(t, b.JS, task)
	r := collect(t, b.JS, "C", 1, time.Minute)["c1"]
	require.Equal(t, messages.StatusInvalid, r.Status)
	require.ErrorIs(t, r.Error, messages.ErrCleartextSecrets)
	dead := 0
	forEachStored(t, b.JS, []string{messages.StreamTasks, messages.StreamDLQ, messages.StreamResults}, func(name string, m *jetstream.RawStreamMsg) {
		if name == messages.StreamDLQ {
			dead++
			require.Contains(t, string(m.Data), `"API_TOKEN":"***"`, "the dead letter keeps the names, not the values")
		}
	})
	require.Equal(t, 1, dead)
}

// forEachStored hands every message of the streams to fn, after checking
// that neither its data nor its headers hold the secret.
func forEachStored(t *testing.T, js jetstream.JetStream, streams []string, fn func(stream string, m *jetstream.RawStreamMsg)) {
	t.Helper()
	ctx := context.Background()
	for _, name := range streams {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			require.NoError(t, err)
			require.NotContains(t, string(m.Data), secretValue, "stream %s seq %d", name, seq)
			fn(name, m)
		}
	}
}
