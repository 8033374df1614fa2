package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNamespaceViewEtcIsItsAllowListColumn: a namespace-mode sandbox sees
// in /etc exactly the entries of the namespace column of hostEtc that the
// host has, nothing of the Landlock column beyond it (resolv.conf, TLS
// certificates). The control: the host's /etc has more, among them a
// Landlock-only entry.
func TestNamespaceViewEtcIsItsAllowListColumn(t *testing.T) {
	// The namespace mode's /etc: what a dynamic program needs, and the
	// alternatives links through which Debian names libraries such as
	// liblapack.so.3 (csdp, which Coq's psatz runs, loads it).
	nsEtc := []string{"ld.so.cache", "ld.so.conf", "nsswitch.conf", "passwd", "group", "localtime", "hosts",
		"host.conf", "gai.conf", "protocols", "services", "mime.types", "os-release", "debian_version", "alternatives"}
	var want []string
	for _, p := range nsEtc {
		p = "/etc/" + p
		if _, err := os.Lstat(p); err == nil {
			want = append(want, filepath.Base(p))
		}
	}
	sort.Strings(want)
	require.NotEmpty(t, want)
	hostOnly := 0
	for _, p := range etcAllowList(IsolationLandlock) {
		if _, err := os.Lstat(p); err == nil && !strings.Contains(strings.Join(want, " "), filepath.Base(p)) {
			hostOnly++
		}
	}
	require.Positive(t, hostOnly, "control: the host has a Landlock-only /etc entry the view must not show")

	o := runIn(t, nsRunner(t), Spec{Argv: []string{"/bin/ls", "-A", "/etc"}})
	require.Equal(t, 0, o.res.ExitCode, o.stderr)
	got := strings.Fields(o.stdout)
	sort.Strings(got)
	require.Equal(t, want, got)
}

// TestLandlockEtcAllowListIsUnchanged: the Landlock column of hostEtc is
// the 20 entries the Landlock mode's policy grants; TestLandlockBoundaries
// proves what stays denied.
func TestLandlockEtcAllowListIsUnchanged(t *testing.T) {
	require.ElementsMatch(t, []string{
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
		"/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
		"/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf",
		"/etc/localtime", "/etc/timezone", "/etc/protocols", "/etc/services",
		"/etc/mime.types", "/etc/os-release", "/etc/ssl", "/etc/ca-certificates",
		"/etc/debian_version", "/etc/alternatives",
	}, etcAllowList(IsolationLandlock))
	p := newLandlockPolicy(landlockView{Home: "/h"})
	require.ElementsMatch(t, append([]string{"/proc"}, etcAllowList(IsolationLandlock)...), p.ReadOnly)
	require.Equal(t, sandboxDevices, p.Devices)
}
