//go:build linux && !amd64

package sandbox

import (
	"github.com/warrenhq/warren/sandbox/internal/seccomppolicy"
	"golang.org/x/net/bpf"
)

// seccompProgram assembles s with go-seccomp-bpf (no generated table for
// this architecture: seccomp_linux.go).
func seccompProgram(s seccompPolicy) ([]bpf.RawInstruction, error) {
	return seccomppolicy.Program(s.AllowInet, s.AllowUnix)
}
