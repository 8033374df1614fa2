package worker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// setTenants records the tenants' quotas (and opens their namespaces) as
// the admin's setup does; a running worker applies a change within a
// second.
func setTenants(t *testing.T, b *brokertest.Broker, tenants ...broker.Tenant) {
	t.Helper()
	_, js := b.Dial(t, "admin")
	_, err := broker.SetupTenants(tctx(t), js, broker.StreamConfig{}, tenants, false)
	require.NoError(t, err)
}

// tenantClient is a client whose session requests carry tenant's token.
func tenantClient(t *testing.T, b *brokertest.Broker, tenant string) *scheduler.Client {
	t.Helper()
	nc, _ := b.Dial(t, "client-"+tenant)
	c, err := scheduler.New(nc, scheduler.Config{Tenant: tenant})
	require.NoError(t, err)
	return c
}

// TestSessionQuotaPerTenant: on a 4-slot host, bob (sessions=1,
// session_ttl=1m) gets one session however many creates race for it, the
// others refused with a quota error naming the limit and the fix; his TTL
// defaults to his cap and a longer one is refused; alice (default quota,
// 4) is held at half the host's slots, 2; the fleet's own sessions have no
// tenant cap; bob's rm frees his; a raised quota applies to the next
// create.
func TestSessionQuotaPerTenant(t *testing.T) {
	b := brokertest.Start(t, brokertest.Options{})
	bobQuota := messages.TenantQuota{Sessions: 1, SessionTTLMS: time.Minute.Milliseconds()}
	setTenants(t, b, broker.Tenant{Name: "bob", Quota: bobQuota}, broker.Tenant{Name: "alice"})
	startSessionHost(t, b, "h1", sessionOpts{capacity: 4, runner: sandboxedRunner(t, 0)})
	bob, alice, fleet := tenantClient(t, b, "bob"), tenantClient(t, b, "alice"), sessionClient(t, b)
	ctx := tctx(t)

	// Three creates race; the cap holds.
	var mu sync.Mutex
	var made []*scheduler.Sandbox
	var refused []error
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			sb, err := bob.CreateSandbox(ctx, scheduler.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, err)
				return
			}
			made = append(made, sb)
		})
	}
	wg.Wait()
	require.Len(t, made, 1, "refused: %v", refused)
	require.Len(t, refused, 2)
	for _, err := range refused {
		require.ErrorIs(t, err, messages.ErrQuotaExceeded)
		var me *messages.Error
		require.ErrorAs(t, err, &me)
		require.Equal(t, "quota.sessions", me.Field)
		require.Contains(t, me.Msg, "tenant bob has 1 open sessions on host h1, its quota (`warren auth quota bob sessions=N` raises it; `warren sandbox rm` frees one)")
	}
	first := made[0]

	// The reported expiry is the TTL cap's: the host default (1h) capped.
	info, err := first.Status(ctx)
	require.NoError(t, err)
	life := info.Expires.Sub(info.Created)
	require.True(t, life > time.Minute-time.Second && life <= time.Minute, "expires %s after create, not bob's 1m cap", life)
	require.Equal(t, first.Expires, info.Expires, "the create's reply told the same expiry")
	_, err = bob.CreateSandbox(ctx, scheduler.CreateOptions{TTL: 2 * time.Minute})
	require.ErrorIs(t, err, messages.ErrQuotaExceeded)
	require.ErrorContains(t, err, "create.ttl_ms: 2m0s exceeds tenant bob's session TTL cap 1m0s")

	// alice is unaffected by bob, and held at half the host's slots.
	for range 2 {
		_, err := alice.CreateSandbox(ctx, scheduler.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = alice.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.ErrorIs(t, err, messages.ErrQuotaExceeded)
	require.ErrorContains(t, err, "tenant alice has 2 open sessions on host h1, half the host's slots")

	// The fleet's own sessions keep the host's rules alone.
	own, err := fleet.CreateSandbox(ctx, scheduler.CreateOptions{TTL: 2 * time.Hour})
	require.NoError(t, err)

	// bob's rm frees his one.
	require.NoError(t, first.Delete(ctx))
	second, err := bob.CreateSandbox(ctx, scheduler.CreateOptions{})
	require.NoError(t, err)

	// A raised quota applies to his next create.
	require.NoError(t, own.Delete(ctx))
	bobQuota.Sessions = 2
	setTenants(t, b, broker.Tenant{Name: "bob", Quota: bobQuota})
	require.Eventually(t, func() bool {
		_, err := bob.CreateSandbox(ctx, scheduler.CreateOptions{})
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "bob's raised quota applies")
	_, err = second.Status(ctx)
	require.NoError(t, err)
}
