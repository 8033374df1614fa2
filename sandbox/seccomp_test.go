package sandbox

import (
	"encoding/binary"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/internal/seccomppolicy"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

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
	allow := uint32(seccomp.ActionAllow)
	afnosupport := uint32(seccomp.ActionErrno) | uint32(unix.EAFNOSUPPORT)
	kill := uint32(seccomp.ActionKillProcess)
	eperm := uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
	id := uint32(native.ID)

	tests := []struct {
		name   string
		policy seccompPolicy
		data   []byte
		want   uint32
	}{
		{"unix socket", seccompPolicy{}, seccompData(id, nr("socket"), unix.AF_UNIX, unix.SOCK_STREAM, 0), afnosupport},
		{"unix socket, network loopback", seccompPolicy{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_UNIX, unix.SOCK_DGRAM, 0), afnosupport},
		{"unix socket, opted in", seccompPolicy{AllowUnix: true}, seccompData(id, nr("socket"), unix.AF_UNIX, unix.SOCK_STREAM, 0), allow},
		{"inet socket, unix opted in, network none", seccompPolicy{AllowUnix: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, 0), afnosupport},
		{"socketpair", seccompPolicy{}, seccompData(id, nr("socketpair"), unix.AF_UNIX, unix.SOCK_STREAM, 0), allow},
		{"inet socket, network none", seccompPolicy{}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_DGRAM, 0), afnosupport},
		{"inet6 socket, network none", seccompPolicy{}, seccompData(id, nr("socket"), unix.AF_INET6, unix.SOCK_STREAM, 0), afnosupport},
		{"inet socket, network loopback", seccompPolicy{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, 0), allow},
		{"netlink", seccompPolicy{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_NETLINK, unix.SOCK_RAW, 0), afnosupport},
		{"packet", seccompPolicy{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_PACKET, unix.SOCK_RAW, 0), afnosupport},
		{"vsock", seccompPolicy{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_VSOCK, unix.SOCK_STREAM, 0), afnosupport},
		{"unix family with junk in the upper half", seccompPolicy{AllowUnix: true}, seccompData(id, nr("socket"), 1<<32|unix.AF_UNIX, unix.SOCK_STREAM, 0), afnosupport},
		{"mptcp", seccompPolicy{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, seccomppolicy.IPProtoMPTCP), afnosupport},
		{"mptcp smuggled in the upper half", seccompPolicy{AllowInet: true}, seccompData(id, nr("socket"), unix.AF_INET, unix.SOCK_STREAM, 1<<32|seccomppolicy.IPProtoMPTCP), afnosupport},
		{"io_uring_setup", seccompPolicy{AllowInet: true}, seccompData(id, nr("io_uring_setup")), uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
		{"keyctl", seccompPolicy{AllowInet: true}, seccompData(id, nr("keyctl")), uint32(seccomp.ActionErrno) | uint32(unix.EPERM)},
		{"unshare CLONE_NEWUSER", seccompPolicy{}, seccompData(id, nr("unshare"), unix.CLONE_NEWUSER|unix.CLONE_NEWNS), eperm},
		{"unshare CLONE_NEWUSER with upper-half junk", seccompPolicy{}, seccompData(id, nr("unshare"), 1<<40|unix.CLONE_NEWUSER), eperm},
		{"unshare CLONE_NEWNS alone", seccompPolicy{}, seccompData(id, nr("unshare"), unix.CLONE_NEWNS), allow},
		{"clone CLONE_NEWUSER", seccompPolicy{AllowInet: true}, seccompData(id, nr("clone"), unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), eperm},
		{"clone of a thread", seccompPolicy{}, seccompData(id, nr("clone"), unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM), allow},
		{"clone of a fork", seccompPolicy{}, seccompData(id, nr("clone"), uint64(unix.SIGCHLD)), allow},
		{"clone3", seccompPolicy{}, seccompData(id, nr("clone3")), uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
		{"read is allowed", seccompPolicy{}, seccompData(id, nr("read")), allow},
		{"x32 ABI", seccompPolicy{}, seccompData(id, 0x40000000|nr("read")), uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
		{"i386 socketcall is killed", seccompPolicy{}, seccompData(uint32(i386.ID), i386.SyscallNames["socketcall"]), kill},
		{"i386 read is killed", seccompPolicy{}, seccompData(uint32(i386.ID), i386.SyscallNames["read"]), kill},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			insts, err := tt.policy.instructions()
			require.NoError(t, err)
			vm, err := bpf.NewVM(insts)
			require.NoError(t, err)
			got, err := vm.Run(tt.data)
			require.NoError(t, err)
			require.Equal(t, tt.want, uint32(got))
		})
	}
}
