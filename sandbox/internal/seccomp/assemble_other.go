//go:build linux && !amd64

package seccomp

import (
	"github.com/warrenhq/warren/sandbox/internal/seccomppolicy"
	"golang.org/x/net/bpf"
)

// program assembles o with go-seccomp-bpf (no generated table for this
// architecture: program_linux.go).
func program(o Options) ([]bpf.RawInstruction, error) {
	return seccomppolicy.Program(o.AllowInet, o.AllowUnix, o.RefuseIPC)
}
