//go:build linux && amd64

package sandbox

import (
	"fmt"

	"golang.org/x/net/bpf"
)

//go:generate go run ./internal/seccomppolicy/gen -o zseccomp_table_amd64.go

// seccompProgram is s's program from the generated table (seccomp_linux.go).
func seccompProgram(s seccompPolicy) ([]bpf.RawInstruction, error) {
	p, ok := seccompTable[s]
	if !ok {
		return nil, fmt.Errorf("seccomp: no generated program for %+v; run go generate ./sandbox", s)
	}
	return p, nil
}
