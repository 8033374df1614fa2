package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/scheduler"
)

// TestTenantAddedLiveUsesJetStream: a tenant added while the broker runs
// (its account appears on the reload of the auth directory) reaches the
// fleet's services (its JetStream API) at once, with no restart. Without
// the second reload (embedded.Server.Reload) it gets "no responders".
func TestTenantAddedLiveUsesJetStream(t *testing.T) {
	f := startAuthFleet(t)
	before := f.srv.Reloads()
	_, err := f.dir.AddSubmitter("carol")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.srv.Reloads() > before }, 10*time.Second, 10*time.Millisecond)
	admin := f.as(t, broker.AdminCreds)
	_, err = broker.SetupTenants(ctx10(t), admin.js, broker.StreamConfig{}, f.dir.Tenants(), false)
	require.NoError(t, err)
	carol := f.as(t, "carol.creds")
	sc, err := scheduler.New(carol.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "carol"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = sc.Hosts(ctx)
	require.NoError(t, err)
}
