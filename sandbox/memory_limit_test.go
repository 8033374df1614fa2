package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// tinyStaticELF is a complete static executable for this architecture
// that writes "ok\n" and exits 0: no libc, no loader, no runtime, a few
// KB of address space. It shows that a small memory limit binds the task's
// program and nothing of the sandbox's own setup.
func tinyStaticELF(t *testing.T) []byte {
	t.Helper()
	const base, hdrs = 0x400000, 64 + 56 // ELF header + one program header
	var code []byte
	var machine uint16
	switch runtime.GOARCH {
	case "amd64":
		machine = 62
		code = []byte{
			0xb8, 1, 0, 0, 0, // mov eax, 1 (write)
			0xbf, 1, 0, 0, 0, // mov edi, 1
			0x48, 0x8d, 0x35, 16, 0, 0, 0, // lea rsi, [rip+16] (the message)
			0xba, 3, 0, 0, 0, // mov edx, 3
			0x0f, 0x05, // syscall
			0xb8, 60, 0, 0, 0, // mov eax, 60 (exit)
			0x31, 0xff, // xor edi, edi
			0x0f, 0x05, // syscall
		}
	case "arm64":
		machine = 183
		for _, in := range []uint32{
			0xd2800808, // mov x8, #64 (write)
			0xd2800020, // mov x0, #1
			0x100000c1, // adr x1, .+24 (the message)
			0xd2800062, // mov x2, #3
			0xd4000001, // svc #0
			0xd2800ba8, // mov x8, #93 (exit)
			0xd2800000, // mov x0, #0
			0xd4000001, // svc #0
		} {
			code = binary.LittleEndian.AppendUint32(code, in)
		}
	default:
		t.Fatalf("no tiny ELF for %s", runtime.GOARCH)
	}
	code = append(code, "ok\n"...)
	size := uint64(hdrs + len(code))
	le := binary.LittleEndian
	b := []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0} // 64-bit, little endian, v1
	b = le.AppendUint16(b, 2)                                            // ET_EXEC
	b = le.AppendUint16(b, machine)
	b = le.AppendUint32(b, 1)         // EV_CURRENT
	b = le.AppendUint64(b, base+hdrs) // entry
	b = le.AppendUint64(b, 64)        // program headers offset
	b = le.AppendUint64(b, 0)         // section headers offset
	b = le.AppendUint32(b, 0)         // flags
	b = le.AppendUint16(b, 64)        // ELF header size
	b = le.AppendUint16(b, 56)        // program header size
	b = le.AppendUint16(b, 1)         // one program header
	b = le.AppendUint16(b, 64)        // section header size
	b = le.AppendUint16(b, 0)         // no sections
	b = le.AppendUint16(b, 0)         // no section names
	b = le.AppendUint32(b, 1)         // PT_LOAD
	b = le.AppendUint32(b, 5)         // PF_R|PF_X
	b = le.AppendUint64(b, 0)         // file offset
	b = le.AppendUint64(b, base)      // vaddr
	b = le.AppendUint64(b, base)      // paddr
	b = le.AppendUint64(b, size)      // file size
	b = le.AppendUint64(b, size)      // memory size
	b = le.AppendUint64(b, 0x1000)    // alignment
	require.Len(t, b, hdrs)
	return append(b, code...)
}

// staticPrograms writes the tiny ELF into a directory a sandbox can read
// and execute, and returns both paths and a function that builds a static
// Go program (which reserves ~1 GB of address space at start) there, once.
func staticPrograms(t *testing.T) (dir, tiny string, goProg func() string) {
	t.Helper()
	dir = hostDir(t)
	tiny = filepath.Join(dir, "tiny")
	require.NoError(t, os.WriteFile(tiny, tinyStaticELF(t), 0o755))
	out, err := exec.Command(tiny).Output()
	require.NoError(t, err, "control: the tiny ELF runs on the host")
	require.Equal(t, "ok\n", string(out))
	built := ""
	return dir, tiny, func() string {
		if built != "" {
			return built
		}
		src := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module memprobe\n\ngo 1.22\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(src, "main.go"), []byte(`package main

import "fmt"

func main() {
	b := make([]byte, 8<<20)
	for i := range b {
		b[i] = byte(i)
	}
	fmt.Println("ok", len(b)>>20)
}
`), 0o644))
		built = filepath.Join(dir, "goprog")
		goBin, err := exec.LookPath("go")
		require.NoError(t, err, "the static Go probe is built with the Go toolchain on PATH (as the suite's init is)")
		cmd := exec.Command(goBin, "build", "-o", built, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "building the static Go probe: %s", b)
		return built
	}
}

// TestSmallMemoryLimitsBindTheTaskNotTheInit: at 64 MiB a static program
// runs and at 256 MiB python3 does, every time, in every mode: the limit
// binds the command, never the sandbox init's setup (whose Go runtime
// already reserves ~1.2 GB of address space). With a cgroup, memory is
// the cgroup's and a static Go program runs at 64 MiB too; without one
// RLIMIT_AS is set as the init's very last step before execve.
func TestSmallMemoryLimitsBindTheTaskNotTheInit(t *testing.T) {
	dir, tiny, goProg := staticPrograms(t)
	const runs = 15
	for _, m := range runModes() {
		t.Run(m.name, func(t *testing.T) {
			r, iso := m.runner(t)
			cases := []struct {
				name   string
				spec   Spec
				stdout string
			}{
				{"static binary at 64 MiB", Spec{Argv: []string{tiny}, ReadOnly: []string{dir}, Limits: Limits{Memory: 64 << 20}}, "ok\n"},
				{"python3 at 256 MiB", Spec{Argv: py(`print("ok")`), Limits: Limits{Memory: 256 << 20}}, "ok\n"},
				{"shell at 64 MiB", Spec{Argv: sh(`echo ok`), Limits: Limits{Memory: 64 << 20}}, "ok\n"},
			}
			r.setupHost()
			if r.cgroups.Version != 0 {
				cases = append(cases, struct {
					name   string
					spec   Spec
					stdout string
				}{"static Go program at 64 MiB (cgroup)", Spec{Argv: []string{goProg()}, ReadOnly: []string{dir}, Limits: Limits{Memory: 64 << 20}}, "ok 8\n"})
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					for i := range runs {
						o := modeRun(t, r, iso, tc.spec)
						require.Equal(t, 0, o.res.ExitCode, "run %d: %+v\nstderr: %s", i, o.res, o.stderr)
						require.Equal(t, tc.stdout, o.stdout, "run %d", i)
					}
				})
			}
		})
	}
}

// allocProbe allocates mb MiB and writes every page: "allocated", or
// "MemoryError" when the allocation is refused.
func allocProbe(mb int) []string {
	return py(fmt.Sprintf(`
try:
    b = bytearray(%d << 20); b[::4096] = b"x" * len(b[::4096]); print("allocated")
except MemoryError:
    print("MemoryError")
`, mb))
}

// TestMemoryBombIsStoppedAtSmallLimits: a task allocating far past its
// limit is stopped in every mode, at 64 and 256 MiB: killed by the
// cgroup's OOM killer (SIGKILL) where the run has a cgroup, refused
// (MemoryError) by RLIMIT_AS without one. The control allocates within the
// limit.
func TestMemoryBombIsStoppedAtSmallLimits(t *testing.T) {
	alloc := allocProbe
	for _, m := range runModes() {
		t.Run(m.name, func(t *testing.T) {
			r, iso := m.runner(t)
			r.setupHost()
			cgroup := r.cgroups.Version != 0
			for _, limit := range []int64{64 << 20, 256 << 20} {
				o := modeRun(t, r, iso, Spec{Argv: alloc(16), Limits: Limits{Memory: limit}})
				require.Equal(t, "allocated\n", o.stdout, "control at %d MiB: %s", limit>>20, o.stderr)
				require.Equal(t, 0, o.res.ExitCode)

				o = modeRun(t, r, iso, Spec{Argv: alloc(1024), Limits: Limits{Memory: limit}})
				if cgroup {
					require.Equal(t, "SIGKILL", o.res.Signal, "OOM-killed at %d MiB: %+v %s", limit>>20, o.res, o.stdout)
					require.Equal(t, 1, o.res.OOMKills)
					require.LessOrEqual(t, o.res.PeakMemory, limit)
				} else {
					require.Equal(t, "MemoryError\n", o.stdout, "refused by RLIMIT_AS at %d MiB: %+v %s", limit>>20, o.res, o.stderr)
				}
				require.False(t, o.res.TimedOut)
			}
		})
	}
}
