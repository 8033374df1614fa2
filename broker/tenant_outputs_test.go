package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// TestTenantReadsItsLargeOutputs: a tenant's task whose stdout is too
// large for its result, and which keeps a file (outputs), stores both in
// the tenant's own outputs store; the tenant collects the whole stdout and
// fetches the file with its own creds. The other tenant cannot read that
// store: its object store open is refused.
func TestTenantReadsItsLargeOutputs(t *testing.T) {
	f := startAuthFleet(t)
	startTenantWorker(t, f)
	alice, bob := f.as(t, "alice.creds"), f.as(t, "bob.creds")
	sc, err := scheduler.New(alice.nc, scheduler.Config{APIPrefix: broker.TenantAPIPrefix, Tenant: "alice"})
	require.NoError(t, err)
	const size = 2 << 20 // over a result's inline output
	b, err := scheduler.NewBatch([]messages.Task{{ID: "big", Kind: messages.KindExec,
		Shell:   "head -c 2097152 /dev/zero | tr '\\0' x; echo kept > out.txt",
		Outputs: []string{"out.txt"}, Limits: messages.Limits{OutputBytes: 4 << 20}}},
		scheduler.BatchOptions{Batch: "outs", Tenant: "alice"})
	require.NoError(t, err)
	_, err = sc.Publish(ctx10(t), b)
	require.NoError(t, err)
	var got *messages.Result
	_, err = sc.Collect(ctx10(t), scheduler.CollectOptions{Batch: b.ID, OnResult: func(r *messages.Result) error { got = r; return nil }})
	require.NoError(t, err)
	require.Equal(t, messages.StatusOK, got.Status, "%+v", got.Error)
	require.Len(t, got.Stdout, size, "the whole stdout, read back from the tenant's outputs store")
	require.Equal(t, strings.Repeat("x", 16), string(got.Stdout)[:16])
	require.Empty(t, got.StdoutObject)

	dir := t.TempDir()
	require.NoError(t, sc.FetchFiles(ctx10(t), got, dir))
	data, err := os.ReadFile(filepath.Join(dir, "big", "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "kept\n", string(data))

	// bob: alice's store is not his.
	bjs := bob.js
	_, err = bjs.ObjectStore(ctx10(t), messages.Namespace{Tenant: "alice"}.Outputs())
	require.Error(t, err, "bob opens alice's outputs store")
}
