package sandbox

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox/initproc"
	"golang.org/x/sys/unix"
)

// TestOnlyTheHostsRefusalFallsBack: a namespace launch's failure is the
// host refusing namespaces (ErrUnavailable: auto runs Landlock-only, the
// warm pool stops building namespace sandboxes) only for the errnos a host
// refuses them with. A failure of this run (the init's exec refused, out of
// processes, memory or descriptors) stays the run's: a task must not get
// fewer layers, nor the worker lose its namespace warm pool, because one
// launch failed (the init's exec once failed with EACCES at random: see
// TestTheInitStartsWhateverTheWorkersDescriptorNumbers).
func TestOnlyTheHostsRefusalFallsBack(t *testing.T) {
	startErr := func(errno unix.Errno) error {
		return &SetupError{Step: stepStartInit, Path: "/x/warren-sandbox-init", Err: &fs.PathError{Op: "fork/exec", Path: "/proc/self/fd/6", Err: errno}}
	}
	stepErr := func(step string, errno unix.Errno) error { return &SetupError{Step: step, Err: errno} }
	tests := []struct {
		name    string
		err     error
		refused bool
	}{
		{"clone refused by seccomp or a sysctl", startErr(unix.EPERM), true},
		{"a max_*_namespaces limit", startErr(unix.ENOSPC), true},
		{"the nesting limit", startErr(unix.EUSERS), true},
		{"the init's exec refused", startErr(unix.EACCES), false},
		{"out of processes", startErr(unix.EAGAIN), false},
		{"out of memory", startErr(unix.ENOMEM), false},
		{"out of descriptors", startErr(unix.EMFILE), false},
		{"first mount refused (AppArmor)", stepErr(string(initproc.StepMakePrivate), unix.EPERM), true},
		{"first mount denied", stepErr(string(initproc.StepMakePrivate), unix.EACCES), true},
		{"first mount out of memory", stepErr(string(initproc.StepMakePrivate), unix.ENOMEM), false},
		{"a later step refused", stepErr("pivot_root", unix.EPERM), false},
		{"not a setup error", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := refusedByHost(tt.err)
			require.Equal(t, tt.refused, errors.Is(err, ErrUnavailable), "%v", err)
			var se *SetupError
			if errors.As(tt.err, &se) {
				var errno unix.Errno
				require.True(t, errors.As(err, &errno), "the errno still in the chain: %v", err)
			}
		})
	}
}
