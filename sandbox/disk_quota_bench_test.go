package sandbox

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkDiskQuota measures what the home's tmpfs adds to a cold run of
// /bin/true, interleaved with the same run without a disk limit (the
// same-run baseline), in namespace and Landlock-only mode; and, as root,
// the mount + unmount pair alone.
func BenchmarkDiskQuota(b *testing.B) {
	root, err := os.MkdirTemp("", "warren-bench-quota-")
	require.NoError(b, err)
	b.Cleanup(func() { _ = os.RemoveAll(root) })
	require.NoError(b, os.Chmod(root, 0o711))
	r, err := New(Config{ScratchRoot: root})
	require.NoError(b, err)
	ctx := context.Background()
	for _, iso := range []Isolation{IsolationNamespace, IsolationLandlock} {
		b.Run(string(iso), func(b *testing.B) {
			with := Spec{Argv: []string{"/bin/true"}, Isolation: iso, Limits: Limits{Disk: DefaultDisk}}
			without := with
			without.Limits.Disk = -1
			if iso == IsolationLandlock && os.Geteuid() != 0 {
				b.Skip("an unprivileged Landlock-only run cannot bound its home")
			}
			for _, s := range []Spec{with, without} {
				res, err := r.Run(ctx, s) // warm up the page cache and cgroups
				require.NoError(b, err)
				require.Equal(b, 0, res.ExitCode)
			}
			var quota, plain time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if res, err := r.Run(ctx, with); err != nil || res.ExitCode != 0 {
					b.Fatal(err, res)
				}
				t1 := time.Now()
				if res, err := r.Run(ctx, without); err != nil || res.ExitCode != 0 {
					b.Fatal(err, res)
				}
				quota += t1.Sub(t0)
				plain += time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(quota.Microseconds())/1000/n, "quota-ms/op")
			b.ReportMetric(float64(plain.Microseconds())/1000/n, "noquota-ms/op")
			b.ReportMetric(float64(quota-plain)/n/1000, "added-us/op")
		})
	}
	b.Run("mount", func(b *testing.B) {
		if os.Geteuid() != 0 {
			b.Skip("only a root worker mounts on the host")
		}
		dir, err := os.MkdirTemp(root, "m-")
		require.NoError(b, err)
		s := scratchDir{path: dir, owned: true}
		b.ResetTimer()
		for range b.N {
			if err := s.bound(quotaHost, DefaultDisk, 0, 0); err != nil {
				b.Fatal(err)
			}
			if err := s.unmountQuota(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		var st unix.Statfs_t
		require.NoError(b, unix.Statfs(dir, &st))
		require.NotEqual(b, int64(unix.TMPFS_MAGIC), int64(st.Type), "nothing left mounted")
	})
}
