//go:build linux && amd64

package seccomp

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/seccomppolicy"
)

// The generated table is go-seccomp-bpf's assembly of each policy, and
// holds every policy; a change to the policy or the library fails here
// until `go generate ./sandbox/internal/seccomp` is run.
func TestSeccompTableIsTheLibrarysAssembly(t *testing.T) {
	require.Len(t, table, 8, "one program per Options")
	for _, inet := range []bool{false, true} {
		for _, unix := range []bool{false, true} {
			for _, ipc := range []bool{false, true} {
				want, err := seccomppolicy.Program(inet, unix, ipc)
				require.NoError(t, err)
				got, err := program(Options{AllowInet: inet, AllowUnix: unix, RefuseIPC: ipc})
				require.NoError(t, err)
				require.Equal(t, want, got, "inet %t unix %t ipc %t: the table is stale; run go generate ./sandbox/internal/seccomp", inet, unix, ipc)
			}
		}
	}
}
