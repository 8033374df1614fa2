package home

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

const mountinfoSample = `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/root rw
40 27 0:40 / /tmp rw - tmpfs tmpfs rw
41 40 0:41 / /tmp/warren-home-a rw - tmpfs tmpfs rw
42 40 0:42 / /tmp/with\040space rw - tmpfs tmpfs rw
43 27 0:43 / /tmpx rw - tmpfs tmpfs rw
44 27 8:2 / /usr/local rw - ext4 /dev/sdb rw
`

func TestSubmountsOf(t *testing.T) {
	for _, tt := range []struct {
		dir  string
		want []string
	}{
		{"/tmp", []string{"/tmp/warren-home-a", "/tmp/with space"}},
		{"/tmp/", []string{"/tmp/warren-home-a", "/tmp/with space"}},
		{"/usr", []string{"/usr/local"}},
		{"/usr/local", nil}, // the mount itself is not under it
		{"/tmpx", nil},
		{"/home", nil},
	} {
		require.Equal(t, tt.want, SubmountsOf([]byte(mountinfoSample), tt.dir), tt.dir)
	}
	require.Len(t, SubmountsOf([]byte(mountinfoSample), "/"), 6)
}

// A bind refused with EINVAL whose source has mounts under it says so,
// names them and the fix, and still unwraps to EINVAL; any other failure
// is left as it was.
func TestExplainBind(t *testing.T) {
	err := ExplainBind("bind", "/usr", unix.EINVAL, []byte(mountinfoSample))
	require.ErrorIs(t, err, ErrSubmounts)
	require.ErrorIs(t, err, unix.EINVAL)
	require.ErrorContains(t, err, "/usr/local")
	require.ErrorContains(t, err, "bind a path without mounts under it")

	many := mountinfoSample
	for i := range 5 {
		many += fmt.Sprintf("%d 27 0:9%d / /usr/m%d rw - tmpfs tmpfs rw\n", 50+i, i, i)
	}
	require.ErrorContains(t, ExplainBind("bind", "/usr", unix.EINVAL, []byte(many)), "and 3 more")

	for _, tt := range []struct {
		step, path string
		err        error
	}{
		{"bind", "/home", unix.EINVAL},      // nothing under it
		{"bind", "/usr", unix.EACCES},       // another errno
		{"mount /tmp", "/tmp", unix.EINVAL}, // another step
		{"bind", "", unix.EINVAL},
	} {
		got := ExplainBind(tt.step, tt.path, tt.err, []byte(mountinfoSample))
		require.Equal(t, tt.err, got, "%s %s: left as it was", tt.step, tt.path)
		require.NotErrorIs(t, got, ErrSubmounts)
	}
}
