package initproc

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPreparedLandlockMatchesOnlyItsPolicy: a warm init enforces its
// prepared ruleset only for a task whose policy is the one it was built
// from; any other difference (a path, a right, the network, the floor, the
// seccomp program) makes the init build the task's own.
func TestPreparedLandlockMatchesOnlyItsPolicy(t *testing.T) {
	if LandlockABI() < 6 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock ABI %d < 6 in CI, where the kernel has it", LandlockABI())
		}
		t.Skipf("Landlock ABI %d < 6 on this kernel: cannot build a ruleset", LandlockABI())
	}
	home := t.TempDir()
	base := func() *Landlock {
		return &Landlock{
			MinABI:         6,
			ReadExec:       []string{"/usr", "/bin"},
			ReadOnly:       []string{"/etc/hostname"},
			Devices:        []string{"/dev/null"},
			ReadWrite:      []string{home},
			DenyTCPConnect: true,
			Seccomp:        &Seccomp{Program: []SockFilter{{Code: 6, K: 0x7fff0000}}},
		}
	}
	pre, err := PrepareLandlock(base())
	require.NoError(t, err)
	t.Cleanup(pre.Close)
	require.True(t, pre.Matches(base()), "an equal policy uses the prepared ruleset")
	for name, edit := range map[string]func(*Landlock){
		"read-exec path": func(p *Landlock) { p.ReadExec = append(p.ReadExec, "/opt") },
		"read-write":     func(p *Landlock) { p.ReadWrite = []string{t.TempDir()} },
		"network":        func(p *Landlock) { p.DenyTCPConnect = false },
		"floor":          func(p *Landlock) { p.MinABI = 7 },
		"seccomp":        func(p *Landlock) { p.Seccomp.Program[0].K = 0 },
		"no seccomp":     func(p *Landlock) { p.Seccomp = nil },
	} {
		p := base()
		edit(p)
		require.False(t, pre.Matches(p), name)
	}
	require.False(t, pre.Matches(nil))
	var none *PreparedLandlock
	require.False(t, none.Matches(base()), "no prepared ruleset matches nothing")
}
