package broker

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var tenantNameSeeds = []string{"", "a", "0", "acme", "acme-1", "acme_1", "-acme", "_acme", "Acme", "a.b", "a b", "é",
	strings.Repeat("a", 32), strings.Repeat("a", 33), "a" + strings.Repeat("-", 31), "a\x00"}

func tenantNameAgrees(t *testing.T, s string) {
	t.Helper()
	re := regexp.MustCompile(tenantNameExpr)
	require.Equal(t, re.MatchString(s), validTenantName(s), "%q", s)
}

func TestTenantNameLoopIsItsExpression(t *testing.T) {
	for _, s := range tenantNameSeeds {
		tenantNameAgrees(t, s)
	}
	require.True(t, validTenantName("acme"))
	require.False(t, validTenantName("_acme"))
}

func FuzzTenantName(f *testing.F) {
	for _, s := range tenantNameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { tenantNameAgrees(t, s) })
}
