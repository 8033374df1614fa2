package sandbox

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// ownListener binds a TCP listener on 127.0.0.1, connects to it and
// sends a line through, then tries the host's listener at port.
const ownListener = `
import socket, errno
try:
    l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
    c = socket.socket(); c.connect(l.getsockname()); a, _ = l.accept()
    c.sendall(b"ping"); print("own", a.recv(4).decode())
except OSError as e:
    print("own ERR", errno.errorcode.get(e.errno, e.errno))
try:
    s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", %d)); print("host OK")
except OSError as e:
    print("host ERR", errno.errorcode.get(e.errno, e.errno))
`

// TestLoopbackListenerIsTheSandboxs: with network loopback, a sandbox
// with its own network namespace (the layered mode) serves TCP on its
// loopback and talks to itself, and still cannot reach a host listener.
// In the Landlock-only mode the loopback is the host's: bind stays
// refused there (a listener would be open to the host and every other
// sandbox), while connect reaches the host as that mode documents.
func TestLoopbackListenerIsTheSandboxs(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	probe := py(fmt.Sprintf(ownListener, port))
	_, out := runOut(t, probe...)
	require.Equal(t, "own ping\nhost OK\n", out, "control: on the host both work")

	want := map[string]string{
		"layered":  "own ping\nhost ERR ECONNREFUSED\n",
		"landlock": "own ERR EACCES\nhost OK\n",
	}
	for _, m := range hardenedModes(t) {
		t.Run(m.name, func(t *testing.T) {
			o := m.run(t, Spec{Network: NetworkLoopback, Argv: probe})
			require.Equal(t, m.inForce, o.res.InForce)
			require.Equal(t, want[m.name], o.stdout, o.stderr)
		})
	}
	t.Run("network none", func(t *testing.T) {
		for _, m := range hardenedModes(t) {
			o := m.run(t, Spec{Argv: probe})
			require.NotContains(t, o.stdout, "own ping", m.name)
			require.NotContains(t, o.stdout, "host OK", m.name)
		}
	})
}
