package broker_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/sandboxtest"
	"github.com/warrenhq/warren/scheduler"
	"github.com/warrenhq/warren/worker"
)

// TestAuthSandboxSessionsPerTenant: a tenant reaches its own sessions
// (create, exec with streamed output, list) through its account's imports;
// another tenant cannot reach them, neither with the id and token (the
// host checks the token against the subject's tenant) nor by publishing
// on the owner's subjects (the server refuses); and the worker needs
// nothing beyond its role.
func TestAuthSandboxSessionsPerTenant(t *testing.T) {
	f := startAuthFleet(t)
	// An isolated runner (auto), as a worker runs by default; the sandbox
	// uids of a root run must reach its scratch (t.TempDir's parent is 0700).
	scratch, err := os.MkdirTemp("", "warren-auth-session-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(scratch, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(scratch) })
	runner, err := sandbox.New(sandbox.Config{ScratchRoot: scratch, InitPath: sandboxtest.BuildInit(t)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = runner.Close() })
	require.NoError(t, runner.Start(context.Background()))
	wc := f.as(t, broker.WorkerCreds)
	w, err := worker.New(wc.nc, worker.Config{HostID: "w1", Capacity: 2, Runner: runner,
		Isolation: []messages.Isolation{messages.IsolationAuto}, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	require.NoError(t, err)
	ss, err := worker.NewSessions(w, worker.SessionsConfig{Factory: worker.PrimitiveSessions(sandboxtest.BuildAgent(t)), Root: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx10(t)))
	require.NoError(t, ss.Start(ctx10(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	alice := f.as(t, "alice.creds")
	ac, err := scheduler.New(alice.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
	require.NoError(t, err)
	bob := f.as(t, "bob.creds")
	bc, err := scheduler.New(bob.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "bob"})
	require.NoError(t, err)

	sb, err := ac.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	var out bytes.Buffer
	exit, err := sb.Exec(ctx, scheduler.ExecOptions{Argv: []string{"echo", "mine"}}, &out, nil)
	require.NoError(t, err)
	require.Zero(t, exit.ExitCode)
	require.Equal(t, "mine\n", out.String())
	list, err := ac.ListSessions(ctx, "")
	require.NoError(t, err)
	require.Len(t, list, 1)

	// Bob sees none of alice's sessions...
	list, err = bc.ListSessions(ctx, "")
	require.NoError(t, err)
	require.Empty(t, list)
	// ...cannot use them with her id and token on his own subjects...
	stolen, err := bc.OpenSandbox(ctx, sb.ID, sb.Token, messages.DefaultPool)
	require.NoError(t, err)
	_, err = stolen.Status(ctx)
	require.ErrorIs(t, err, messages.ErrTokenInvalid)
	require.ErrorIs(t, stolen.Delete(ctx), messages.ErrTokenInvalid)
	// ...nor publish on hers.
	subj := messages.SandboxSubject(messages.DefaultPool, "w1", "alice", messages.SbxDelete)
	_, err = bob.nc.Request(subj, []byte(`{"v":1,"id":"`+sb.ID+`","token":"`+sb.Token+`"}`), 2*time.Second)
	require.Error(t, err)
	bob.refused(t, subj)
	_, err = sb.Status(ctx)
	require.NoError(t, err, "alice's sandbox is untouched")

	require.NoError(t, sb.Delete(ctx))
	stopCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	require.NoError(t, ss.Stop(stopCtx))
	require.NoError(t, w.Stop(stopCtx))
	require.NoError(t, wc.nc.Flush())
	select {
	case err := <-wc.errs:
		t.Fatalf("the worker needed more than its role allows: %v", err)
	default:
	}
}
