//go:build linux && amd64

package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

//go:generate go run github.com/warrenhq/warren/sandbox/internal/seccomppolicy/gen -o ztable_amd64.go

// program is o's program from the generated table (program_linux.go).
func program(o Options) ([]bpf.RawInstruction, error) {
	p, ok := table[o]
	if !ok {
		return nil, fmt.Errorf("seccomp: no generated program for %+v; run go generate ./sandbox/internal/seccomp", o)
	}
	return p, nil
}
