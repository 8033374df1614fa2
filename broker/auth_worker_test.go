package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/worker"
)

// TestAuthWorkerNeedsNothingMoreThanItsRole: a real worker on worker.creds
// runs a tenant's batch, reacts to a cancel, registers and deregisters,
// and the server reports no permission violation at all.
func TestAuthWorkerNeedsNothingMoreThanItsRole(t *testing.T) {
	f := startAuthFleet(t)
	runner, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNone, AllowInsecure: true, ScratchRoot: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = runner.Close() })
	require.NoError(t, runner.Start(context.Background()))
	wc := f.as(t, broker.WorkerCreds)
	started := make(chan string, 4)
	w, err := worker.New(wc.nc, worker.Config{
		HostID: "w1", Capacity: 2, Runner: runner, Isolation: []messages.Isolation{messages.IsolationNone},
		RegistryInterval: 100 * time.Millisecond,
		Logger:           zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}, worker.OnTaskStarted(started))
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx10(t)))
	alice := f.as(t, "alice.creds")
	sc, err := scheduler.New(alice.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
	require.NoError(t, err)
	b, err := scheduler.NewBatch([]messages.Task{
		{ID: "quick", Kind: messages.KindExec, Shell: "echo hi"},
		{ID: "slow", Kind: messages.KindExec, Shell: "sleep 60"},
	}, scheduler.BatchOptions{Batch: "w", Tenant: "alice"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = sc.Publish(ctx, b)
	require.NoError(t, err)
	for id := ""; id != "slow"; {
		select {
		case id = <-started:
		case <-ctx.Done():
			t.Fatal("the slow task did not start")
		}
	}
	hs, err := sc.Hosts(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1, "the worker registered")
	require.NoError(t, sc.Cancel(ctx, b.ID, 1, "slow", "test"))
	got := map[string]messages.Status{}
	_, err = sc.Collect(ctx, scheduler.CollectOptions{Batch: b.ID, OnResult: func(r *messages.Result) error {
		got[r.TaskID] = r.Status
		return nil
	}})
	for len(wc.errs) > 0 {
		t.Logf("async: %v", <-wc.errs)
	}
	require.NoError(t, err, "got %v", got)
	require.Equal(t, map[string]messages.Status{"quick": messages.StatusOK, "slow": messages.StatusCancelled}, got)
	stopCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	require.NoError(t, w.Stop(stopCtx))
	require.NoError(t, wc.nc.Flush())
	select {
	case err := <-wc.errs:
		t.Fatalf("the worker needed more than its role allows: %v", err)
	default:
	}
}

// TestAuthWorkerHearsItsPoolsTasks: a worker may subscribe to its pool's
// task subjects (an idle worker's doorbell, worker/doorbell.go) and hears
// a tenant's task published there through the tenant's import; another
// pool's are refused.
func TestAuthWorkerHearsItsPoolsTasks(t *testing.T) {
	f := startAuthFleet(t)
	wc := f.as(t, broker.WorkerCreds)
	heard, err := wc.nc.SubscribeSync(messages.SubjectTasksPrefix + "." + messages.DefaultPool + ".>")
	require.NoError(t, err)
	require.NoError(t, wc.nc.Flush())
	alice := f.as(t, "alice.creds")
	sc, err := scheduler.New(alice.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
	require.NoError(t, err)
	b, err := scheduler.NewBatch([]messages.Task{{ID: "t", Kind: messages.KindExec, Shell: "true"}}, scheduler.BatchOptions{Batch: "bell", Tenant: "alice"})
	require.NoError(t, err)
	_, err = sc.Publish(ctx10(t), b)
	require.NoError(t, err)
	m, err := heard.NextMsg(10 * time.Second)
	require.NoError(t, err, "the worker hears the tenant's task")
	require.Equal(t, messages.TaskSubject(messages.DefaultPool, messages.DefaultProfile, b.ID), m.Subject)
	select {
	case err := <-wc.errs:
		t.Fatalf("the subscription needed more than the worker's role: %v", err)
	default:
	}

	_, err = wc.nc.SubscribeSync(messages.SubjectTasksPrefix + ".gpu.>")
	require.NoError(t, err)
	wc.refused(t, messages.SubjectTasksPrefix+".gpu.>")
}
