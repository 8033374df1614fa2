package seccomp

import (
	"encoding/binary"
	"fmt"
	"testing"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/initproc"
	"github.com/warrenhq/warren/sandbox/internal/seccomppolicy"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// instructions is the loaded program disassembled (tests run it in a BPF
// interpreter).
func instructions(o Options) ([]bpf.Instruction, error) {
	raw, err := program(o)
	if err != nil {
		return nil, err
	}
	insts, ok := bpf.Disassemble(raw)
	if !ok {
		return nil, fmt.Errorf("seccomp: the program holds instructions x/net/bpf cannot decode")
	}
	return insts, nil
}

// seccompData encodes a seccomp_data for x/net/bpf's interpreter, whose
// 32-bit loads are big-endian: each native 32-bit word is stored BE at its
// native (little-endian) position, so the program sees native values.
func seccompData(archID uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], archID)
	for i, a := range args {
		off := 16 + 8*i
		binary.BigEndian.PutUint32(b[off:], uint32(a))       // low half first (LE)
		binary.BigEndian.PutUint32(b[off+4:], uint32(a>>32)) // then high half
	}
	return b
}

// TestSeccompProgram runs the assembled filter in a BPF interpreter over
// chosen syscalls: the filter itself, including the paths no test process
// can take (a foreign architecture, x32, junk in an argument's upper half).
func TestSeccompProgram(t *testing.T) {
	native, err := arch.GetInfo("")
	require.NoError(t, err)
	if native.Name != "x86_64" {
		t.Skipf("syscall numbers below are for x86_64, host is %s", native.Name)
	}
	i386, err := arch.GetInfo("386")
	require.NoError(t, err)
	nr := func(name string) int { return native.SyscallNames[name] }
	allow := uint32(libseccomp.ActionAllow)
	afnosupport := uint32(libseccomp.ActionErrno) | uint32(unix.EAFNOSUPPORT)
	kill := uint32(libseccomp.ActionKillProcess)
	eperm := uint32(libseccomp.ActionErrno) | uint32(unix.EPERM)
	id := uint32(native.ID)

	tests := []struct {
		name   string
		policy Options
		data   []byte
		want   uint32
	}{
		{"unix socket", Options{}, seccompData(id, nr("socket"), unix.AF_UNIX, unix.SOCK_STREAM, 0), afnosupport},
		{"unix socket, network loopback", Options{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_UNIX, unix.SOCK_DGRAM, 0), afnosupport},
		{"unix socket, opted in", Options{AllowUnix: true}, seccompData(id, nr("socket"), unix.AF_UNIX, unix.SOCK_STREAM, 0), allow},
		{"inet socket, unix opted in, network none", Options{AllowUnix: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, 0), afnosupport},
		{"socketpair", Options{}, seccompData(id, nr("socketpair"), unix.AF_UNIX, unix.SOCK_STREAM, 0), allow},
		{"inet socket, network none", Options{}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_DGRAM, 0), afnosupport},
		{"inet6 socket, network none", Options{}, seccompData(id, nr("socket"), unix.AF_INET6, unix.SOCK_STREAM, 0), afnosupport},
		{"inet socket, network loopback", Options{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, 0), allow},
		{"netlink", Options{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_NETLINK, unix.SOCK_RAW, 0), afnosupport},
		{"packet", Options{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_PACKET, unix.SOCK_RAW, 0), afnosupport},
		{"vsock", Options{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_VSOCK, unix.SOCK_STREAM, 0), afnosupport},
		{"unix family with junk in the upper half", Options{AllowUnix: true}, seccompData(id, nr("socket"), 1<<32|unix.AF_UNIX, unix.SOCK_STREAM, 0), afnosupport},
		{"mptcp", Options{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, seccomppolicy.IPProtoMPTCP), afnosupport},
		{"mptcp smuggled in the upper half", Options{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, 1<<32|seccomppolicy.IPProtoMPTCP), afnosupport},
		{"io_uring_setup", Options{AllowInet: true}, seccompData(id, nr("io_uring_setup")), uint32(libseccomp.ActionErrno) | uint32(unix.ENOSYS)},
		{"keyctl", Options{AllowInet: true}, seccompData(id, nr("keyctl")), uint32(libseccomp.ActionErrno) | uint32(unix.EPERM)},
		{"unshare CLONE_NEWUSER", Options{}, seccompData(id, nr("unshare"), unix.CLONE_NEWUSER|unix.CLONE_NEWNS), eperm},
		{"unshare CLONE_NEWUSER with upper-half junk", Options{}, seccompData(id, nr("unshare"), 1<<40|unix.CLONE_NEWUSER), eperm},
		{"unshare CLONE_NEWNS alone", Options{}, seccompData(id, nr("unshare"), unix.CLONE_NEWNS), allow},
		{"clone CLONE_NEWUSER", Options{AllowInet: true}, seccompData(id, nr("clone"), unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm},
		{"clone of a thread", Options{}, seccompData(id, nr("clone"), unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM), allow},
		{"clone of a fork", Options{}, seccompData(id, nr("clone"), uint64(unix.SIGCHLD)), allow},
		{"clone3", Options{}, seccompData(id, nr("clone3")), uint32(libseccomp.ActionErrno) | uint32(unix.ENOSYS)},
		{"read is allowed", Options{}, seccompData(id, nr("read")), allow},
		{"shmget, own IPC namespace", Options{}, seccompData(id, nr("shmget"), 0x1234, 4096, 0o1600), allow},
		{"mq_open, own IPC namespace", Options{AllowInet: true}, seccompData(id, nr("mq_open")), allow},
		{"read, IPC refused", Options{RefuseIPC: true}, seccompData(id, nr("read")), allow},
		{"x32 ABI", Options{}, seccompData(id, 0x40000000|nr("read")), uint32(libseccomp.ActionErrno) | uint32(unix.ENOSYS)},
		{"i386 socketcall is killed", Options{}, seccompData(uint32(i386.ID), i386.SyscallNames["socketcall"]), kill},
		{"i386 read is killed", Options{}, seccompData(uint32(i386.ID), i386.SyscallNames["read"]), kill},
	}
	// Every SysV IPC and POSIX message queue call, listed here apart from
	// the policy so that one dropped from it fails.
	for _, name := range []string{
		"shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl",
		"semget", "semop", "semtimedop", "semctl",
		"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	} {
		for _, o := range []Options{{RefuseIPC: true}, {AllowInet: true, AllowUnix: true, RefuseIPC: true}} {
			tests = append(tests, struct {
				name   string
				policy Options
				data   []byte
				want   uint32
			}{fmt.Sprintf("%s, IPC refused %+v", name, o), o, seccompData(id, nr(name)), eperm})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			insts, err := instructions(tt.policy)
			require.NoError(t, err)
			vm, err := bpf.NewVM(insts)
			require.NoError(t, err)
			got, err := vm.Run(tt.data)
			require.NoError(t, err)
			require.Equal(t, tt.want, uint32(got))
		})
	}
}

// Program is the raw program in the init's form, and the same one for
// every call with the same Options.
func TestProgramIsTheAssemblyForTheInit(t *testing.T) {
	for _, o := range []Options{{}, {AllowInet: true}, {AllowUnix: true}, {AllowInet: true, AllowUnix: true}, {RefuseIPC: true}, {AllowInet: true, AllowUnix: true, RefuseIPC: true}} {
		raw, err := program(o)
		require.NoError(t, err)
		got := Program(o)
		require.Len(t, got.Program, len(raw), "%+v", o)
		for i, in := range raw {
			require.Equal(t, initproc.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}, got.Program[i], "%+v: instruction %d", o, i)
		}
		require.Same(t, got, Program(o), "%+v: assembled once", o)
	}
}
