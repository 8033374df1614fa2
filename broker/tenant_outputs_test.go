package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
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
	sc := tenantClient(t, alice, "alice")
	const size = 2 << 20 // over a result's inline output
	got := runOne(t, sc, "alice", "outs", messages.Task{ID: "big", Kind: messages.KindExec,
		Shell:   "head -c 2097152 /dev/zero | tr '\\0' x; echo kept > out.txt",
		Outputs: []string{"out.txt"}, Limits: messages.Limits{OutputBytes: 4 << 20}})
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
