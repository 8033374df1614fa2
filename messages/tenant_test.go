package messages_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

func TestTenantBatchIDs(t *testing.T) {
	for _, tc := range []struct {
		batch  string
		valid  bool
		tenant string
	}{
		{"b-1", true, ""},
		{"alice.b-1", true, "alice"},
		{"alice.", false, "alice"},
		{".b", false, ""},
		{"a.b.c", false, "a"},
		{"a.>", false, "a"},
		{"a." + strings.Repeat("x", 127), false, "a"},
	} {
		require.Equal(t, tc.valid, messages.ValidBatchID(tc.batch), tc.batch)
		require.Equal(t, tc.tenant, messages.BatchTenant(tc.batch), tc.batch)
	}
	require.Equal(t, "alice.b-1", messages.QualifyBatch("alice", "b-1"))
	require.Equal(t, "alice.b-1", messages.QualifyBatch("alice", "alice.b-1"), "already the tenant's")
	require.Equal(t, "alice.bob.b-1", messages.QualifyBatch("alice", "bob.b-1"), "another tenant's name stays invalid")
	require.False(t, messages.ValidBatchID(messages.QualifyBatch("alice", "bob.b-1")))
	require.Equal(t, "b-1", messages.QualifyBatch("", "b-1"))
	// The tenant is a subject token of its own where the broker matches it.
	require.Equal(t, "warren.tasks.p.q.alice.b-1", messages.TaskSubject("p", "q", "alice.b-1"))
	require.Equal(t, "warren.results.alice.b-1.2.t", messages.ResultSubject("alice.b-1", 2, "t"))
	require.Equal(t, "warren.tasks.p.q.>", messages.TaskFilter("p", "q"), "the pool's consumer takes both forms")
}
