package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSetupDigestIsTheTables: the constant SetupDigest returns is the
// digest of this build's resource table; when a resource changes, set
// setupDigest (broker/resources.go) to the value this test names.
func TestSetupDigestIsTheTables(t *testing.T) {
	require.Equal(t, tableDigest(), SetupDigest(), "the resource table changed: set setupDigest in broker/resources.go to %q", tableDigest())
}
