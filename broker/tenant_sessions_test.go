package broker_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
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

// sessionFleet is an authenticated broker with alice and bob, and one
// 2-slot worker serving sessions from a runner whose warm sandboxes are
// slots (namespace mode with the Landlock layer, bounded homes): one per
// view, reused session after session.
type sessionFleet struct {
	*authFleet
	runner       *sandbox.Runner
	alice, bob   *scheduler.Client
	aliceC, bobC *client
}

func startSessionFleet(t *testing.T) *sessionFleet {
	t.Helper()
	f := startAuthFleet(t)
	scratch, err := os.MkdirTemp("", "warren-tenant-slot-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(scratch, 0o711))
	t.Cleanup(func() { _ = os.RemoveAll(scratch) })
	runner, err := sandbox.New(sandbox.Config{Isolation: sandbox.IsolationNamespace, ScratchRoot: scratch, InitPath: sandboxtest.BuildInit(t),
		Prestart: 1, Defaults: sandbox.Limits{Disk: sandbox.DefaultDisk}})
	if err != nil {
		sandboxtest.Unavailable(t, err.Error())
	}
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = ss.Stop(ctx)
		_ = w.Stop(ctx)
	})
	sf := &sessionFleet{authFleet: f, runner: runner, aliceC: f.as(t, "alice.creds"), bobC: f.as(t, "bob.creds")}
	sf.alice, err = scheduler.New(sf.aliceC.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
	require.NoError(t, err)
	sf.bob, err = scheduler.New(sf.bobC.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "bob"})
	require.NoError(t, err)
	return sf
}

// waitSlots waits until the runner's warm slots are ready, none being
// built: the default view's and the sessions' view's.
func (f *sessionFleet) waitSlots(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { w := f.runner.Warm(); return w.Ready == 2 && w.Starting == 0 },
		30*time.Second, 10*time.Millisecond, "the warm slots are ready")
}

// sh runs script in sb and returns its stdout.
func sh(t *testing.T, sb *scheduler.Sandbox, script string) string {
	t.Helper()
	var out, errb bytes.Buffer
	exit, err := sb.Exec(ctx10(t), scheduler.ExecOptions{Argv: []string{"sh", "-c", script}}, &out, &errb)
	require.NoError(t, err)
	require.Zero(t, exit.ExitCode, errb.String())
	return out.String()
}

// sessionTraces are the traces probeTraces found, and where the session
// ran (its home and uid: the slot).
type sessionTraces struct {
	listed []string // the home's entries, through the file methods
	seen   string   // the traces a command found
	procs  int      // processes on the host whose command line has the marker
	where  string
}

func probeTraces(t *testing.T, sb *scheduler.Sandbox, marker string) sessionTraces {
	t.Helper()
	es, err := sb.List(ctx10(t), "")
	require.NoError(t, err)
	var p sessionTraces
	for _, e := range es {
		p.listed = append(p.listed, e.Name)
	}
	out := sh(t, sb, `echo "$HOME $(id -u)"; for f in "$HOME/upload.txt" "$HOME/command.txt" /tmp/tmp.txt /dev/shm/shm.txt; do test -e "$f" && echo "$f"; done; true`)
	p.where, p.seen, _ = strings.Cut(out, "\n")
	p.procs = procsWith(t, marker)
	return p
}

func procsWith(t *testing.T, marker string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), marker) {
			n++
		}
	}
	return n
}

// TestSessionFilesDoNotCrossTenantsOnAWarmSlot: alice's session on a warm
// slot uploads a file and has a command write in its home, /tmp and
// /dev/shm and leave a daemon; she removes it; bob's next session takes
// the same slot (same home, same uid) and lists, reads and finds nothing
// of hers, and no process of hers is left on the host. The control:
// alice's own probe finds every trace, the upload among her commands'
// files and her commands' files among the upload's listing.
func TestSessionFilesDoNotCrossTenantsOnAWarmSlot(t *testing.T) {
	f := startSessionFleet(t)
	ctx := ctx10(t)
	warm, err := f.alice.CreateSandbox(ctx, scheduler.CreateOptions{}) // makes the sessions' view's pool
	require.NoError(t, err)
	require.NoError(t, warm.Delete(ctx))
	f.waitSlots(t)
	marker := "9" + strconv.Itoa(int(time.Now().UnixNano()%1e8))

	a, err := f.alice.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	_, err = a.CopyTo(ctx, strings.NewReader("alice's upload"), "upload.txt", scheduler.CopyOptions{})
	require.NoError(t, err)
	sh(t, a, `echo c > command.txt && echo t > /tmp/tmp.txt && echo s > /dev/shm/shm.txt && setsid sleep `+marker+` </dev/null >/dev/null 2>&1 &`)
	require.Eventually(t, func() bool { return procsWith(t, marker) == 1 }, 10*time.Second, 10*time.Millisecond, "the daemon runs")
	hers := probeTraces(t, a, marker)
	require.Subset(t, hers.listed, []string{"upload.txt", "command.txt"}, "control: the file methods list the upload and the command's file")
	require.Equal(t, []string{"/upload.txt", "/command.txt", "/tmp/tmp.txt", "/dev/shm/shm.txt"}, suffixes(hers.seen),
		"control: her commands see the upload and their own files")
	require.Equal(t, 1, hers.procs, "control: her daemon is seen")
	require.NoError(t, a.Delete(ctx))
	f.waitSlots(t)

	b, err := f.bob.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	his := probeTraces(t, b, marker)
	require.Equal(t, hers.where, his.where, "bob's session runs on alice's slot")
	require.NotContains(t, his.listed, "upload.txt")
	require.NotContains(t, his.listed, "command.txt")
	require.Empty(t, his.seen, "bob's commands find nothing of alice's")
	require.Zero(t, his.procs, "no process of alice's is left")
	var got bytes.Buffer
	_, err = b.CopyFrom(ctx, "upload.txt", &got, 0, -1)
	require.ErrorIs(t, err, messages.ErrNotFound)
	require.NoError(t, b.Delete(ctx))
}

// suffixes keeps the part of each line of s from its first "/" that
// follows the home (the home's own path differs per slot).
func suffixes(s string) []string {
	var out []string
	for _, l := range strings.Fields(s) {
		if i := strings.LastIndex(l, "/upload.txt"); i >= 0 {
			l = l[i:]
		} else if i := strings.LastIndex(l, "/command.txt"); i >= 0 {
			l = l[i:]
		}
		out = append(out, l)
	}
	return out
}

// TestTenantCannotHoldEverySlotThroughSessions: on a 2-slot host alice
// gets one session, half the slots, and her second create is refused
// with a quota error that names the limit; bob still gets his. With bob's
// quota at sessions=1 and session_ttl=10m, his second is refused naming
// his quota and the command that raises it, his TTL defaults to the cap
// and a longer one is refused. The tenant is the subject's: bob cannot
// create on alice's subject (the server refuses him).
func TestTenantCannotHoldEverySlotThroughSessions(t *testing.T) {
	f := startSessionFleet(t)
	ctx := ctx10(t)
	admin := f.as(t, broker.AdminCreds)
	require.NoError(t, f.dir.SetQuota("bob", messages.TenantQuota{Sessions: 1, SessionTTLMS: (10 * time.Minute).Milliseconds()}))
	_, err := broker.SetupTenants(ctx, admin.js, broker.StreamConfig{}, f.dir.Tenants(), false)
	require.NoError(t, err)

	a, err := f.alice.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)
	_, err = f.alice.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.ErrorIs(t, err, messages.ErrQuotaExceeded)
	require.ErrorContains(t, err, "tenant alice has 1 open sessions on host w1, half the host's slots")

	var b *scheduler.Sandbox
	require.Eventually(t, func() bool { // the worker applies bob's quota within a second
		_, err := f.bob.CreateSandbox(ctx, scheduler.CreateOptions{TTL: 20 * time.Minute})
		return err != nil && strings.Contains(err.Error(), "session TTL cap 10m0s")
	}, 10*time.Second, 20*time.Millisecond)
	b, err = f.bob.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err, "alice's sessions leave bob his")
	info, err := b.Status(ctx)
	require.NoError(t, err)
	require.LessOrEqual(t, info.Expires.Sub(info.Created), 10*time.Minute, "his TTL is his cap")
	require.Greater(t, info.Expires.Sub(info.Created), 10*time.Minute-time.Second)
	_, err = f.bob.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.ErrorIs(t, err, messages.ErrQuotaExceeded)
	require.ErrorContains(t, err, "tenant bob has 1 open sessions on host w1, its quota (`warren auth quota bob sessions=N` raises it; `warren sandbox rm` frees one)")

	// bob on alice's subject is refused by the server, not counted as hers.
	subj := messages.SandboxSubject(messages.DefaultPool, "w1", "alice", messages.SbxCreate)
	_, err = f.bobC.nc.Request(subj, []byte(`{"v":1,"create":{}}`), 2*time.Second)
	require.Error(t, err)
	f.bobC.refused(t, subj)

	require.NoError(t, a.Delete(ctx))
	require.NoError(t, b.Delete(ctx))
}
