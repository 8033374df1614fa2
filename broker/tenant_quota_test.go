package broker_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/worker"
)

// TestTenantFillsOnlyItsOwnQuota: bob fills everything a tenant can write
// (his task stream, also through a pool no worker serves; his manifests;
// his cancels) until the server refuses him, with an error that names his
// quota. alice, on the same broker and worker, then submits, runs and
// cancels as if bob were not there. The control: with the same writes
// aimed at one shared stream, the first tenant's fill refuses the second
// (shown on the fleet's own namespace, which every unqualified batch
// shares).
func TestTenantFillsOnlyItsOwnQuota(t *testing.T) {
	f := startAuthFleet(t)
	admin := f.as(t, broker.AdminCreds)
	small := messages.TenantQuota{TaskBytes: 64 << 10, TaskMsgs: 40, ManifestBytes: 16 << 10, CancelBytes: 16 << 10}
	require.NoError(t, f.dir.SetQuota("bob", small))
	_, err := broker.SetupTenants(ctx10(t), admin.js, broker.StreamConfig{}, f.dir.Tenants(), false)
	require.NoError(t, err)
	startTenantWorker(t, f)

	bob, alice := f.as(t, "bob.creds"), f.as(t, "alice.creds")
	bobNS := messages.Namespace{Tenant: "bob"}

	// Tasks: on a pool no worker serves, until refused.
	filled := fillUntilRefused(t, func(i int) error {
		_, err := bob.js.Publish(ctx10(t), messages.TaskSubject("nobody", "default", fmt.Sprintf("bob.fill%d", i)), []byte("x"))
		return err
	})
	require.LessOrEqual(t, filled, 40, "bounded by task_msgs")
	bsc, err := scheduler.New(bob.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "bob", RetryFor: time.Second})
	require.NoError(t, err)
	b, err := scheduler.NewBatch([]messages.Task{{ID: "t", Kind: messages.KindExec, Shell: "true"}}, scheduler.BatchOptions{Batch: "more", Tenant: "bob"})
	require.NoError(t, err)
	_, err = bsc.Publish(ctx10(t), b)
	var full *broker.StoreFullError
	require.ErrorAs(t, err, &full, "bob's publish is refused as his stream being full")
	require.Equal(t, bobNS.Tasks(), full.Stream)
	require.Contains(t, err.Error(), "tenant bob has used its quota")
	// A batch of more is refused whole before its first task, read from
	// bob's own stream's info, with the quota to raise.
	many, err := scheduler.NewBatch([]messages.Task{{ID: "t1", Kind: messages.KindExec, Shell: "true"}, {ID: "t2", Kind: messages.KindExec, Shell: "true"}},
		scheduler.BatchOptions{Batch: "many", Tenant: "bob"})
	require.NoError(t, err)
	_, err = bsc.Publish(ctx10(t), many)
	require.ErrorIs(t, err, broker.ErrNoRoom)
	require.ErrorAs(t, err, &full)
	require.Equal(t, bobNS.Tasks(), full.Stream)
	require.Contains(t, err.Error(), "warren auth quota bob task_bytes=SIZE task_msgs=N")
	_, err = bsc.Manifest(ctx10(t), many.ID)
	require.ErrorIs(t, err, scheduler.ErrUnknownBatch, "no manifest left behind")

	// Manifests and cancels: KV puts until refused.
	for _, bucket := range []string{bobNS.Batches(), bobNS.Cancel()} {
		kv, err := bob.js.KeyValue(ctx10(t), bucket)
		require.NoError(t, err, bucket)
		fillUntilRefused(t, func(i int) error {
			_, err := kv.Put(ctx10(t), fmt.Sprintf("bob.k%d", i), make([]byte, 1<<10))
			return err
		})
	}

	// alice is not affected: she submits, her tasks run, she cancels.
	asc, err := scheduler.New(alice.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
	require.NoError(t, err)
	// a3's stdin is too large for a task message: alice puts it into her
	// inputs store, the worker reads it from there.
	large := make([]byte, 2<<20)
	_, _ = rand.Read(large)
	ab, err := scheduler.NewBatch([]messages.Task{
		{ID: "a1", Kind: messages.KindExec, Shell: "echo one"},
		{ID: "a2", Kind: messages.KindExec, Shell: "echo two"},
		{ID: "a3", Kind: messages.KindExec, Shell: "sha256sum", Stdin: large},
	}, scheduler.BatchOptions{Batch: "work", Tenant: "alice"})
	require.NoError(t, err)
	require.NotNil(t, ab.Tasks[2].StdinObject)
	_, err = asc.Publish(ctx10(t), ab)
	require.NoError(t, err, "alice submits while bob's namespace is full")
	got := map[string]messages.Status{}
	var a3out string
	_, err = asc.Collect(ctx10(t), scheduler.CollectOptions{Batch: ab.ID, OnResult: func(r *messages.Result) error {
		got[r.TaskID] = r.Status
		if r.TaskID == "a3" {
			a3out = string(r.Stdout)
		}
		return nil
	}})
	require.NoError(t, err)
	require.Equal(t, map[string]messages.Status{"a1": messages.StatusOK, "a2": messages.StatusOK, "a3": messages.StatusOK}, got)
	require.Equal(t, fmt.Sprintf("%x  -\n", sha256.Sum256(large)), a3out)
	require.NoError(t, asc.Cancel(ctx10(t), ab.ID, 1, "", "done"), "alice cancels while bob's cancels are full")

	// The control: in one shared stream, a fill refuses everyone. The
	// fleet's namespace is shared by every unqualified batch.
	fleet, err := admin.js.Stream(ctx10(t), messages.StreamTasks)
	require.NoError(t, err)
	cfg := fleet.CachedInfo().Config
	cfg.MaxMsgs = 5
	_, err = admin.js.UpdateStream(ctx10(t), cfg)
	require.NoError(t, err)
	fillUntilRefused(t, func(i int) error {
		_, err := admin.js.Publish(ctx10(t), messages.TaskSubject("nobody", "default", fmt.Sprintf("first%d", i)), []byte("x"))
		return err
	})
	_, err = admin.js.Publish(ctx10(t), messages.TaskSubject("default", "default", "second"), []byte("x"))
	require.True(t, broker.IsStoreFull(err), "a shared stream full refuses the next publisher: %v", err)
}

// fillUntilRefused calls put with 0, 1, ... until the server refuses it as
// full, and returns how many it stored.
func fillUntilRefused(t *testing.T, put func(i int) error) int {
	t.Helper()
	for i := 0; i < 10000; i++ {
		err := put(i)
		if err == nil {
			continue
		}
		require.True(t, broker.IsStoreFull(err) || errors.Is(err, jetstream.ErrStreamNotFound) == false && strings.Contains(err.Error(), "exceeded"),
			"refused for another reason: %v", err)
		return i
	}
	t.Fatal("never refused")
	return 0
}

// startTenantWorker runs a worker on worker.creds (no isolation) for the
// test's duration.
func startTenantWorker(t *testing.T, f *authFleet) {
	t.Helper()
	runner, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = runner.Close() })
	require.NoError(t, runner.Start(context.Background()))
	wc := f.as(t, broker.WorkerCreds)
	w, err := worker.New(wc.nc, worker.Config{
		HostID: "w1", Capacity: 2, Runner: runner, Isolation: []messages.Isolation{messages.IsolationNone},
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel),
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx10(t)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
}
