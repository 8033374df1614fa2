package files

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fixture is a home with hostile contents next to an "outside" directory
// holding a secret and a victim file.
type fixture struct {
	home, outside, secret, victim string
	h                             *Home
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	root := t.TempDir()
	f := fixture{home: filepath.Join(root, "home"), outside: filepath.Join(root, "outside")}
	require.NoError(t, os.Mkdir(f.home, 0o700))
	require.NoError(t, os.Mkdir(f.outside, 0o700))
	f.secret = filepath.Join(f.outside, "secret")
	f.victim = filepath.Join(f.outside, "victim")
	require.NoError(t, os.WriteFile(f.secret, []byte("s3cret"), 0o600))
	require.NoError(t, os.WriteFile(f.victim, []byte("intact"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(f.home, "dir"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(f.home, "dir", "file"), []byte("hello"), 0o600))
	require.NoError(t, os.Symlink(f.secret, filepath.Join(f.home, "link")))
	require.NoError(t, os.Symlink(f.outside, filepath.Join(f.home, "ldir")))
	require.NoError(t, os.Symlink("../../outside", filepath.Join(f.home, "dir", "up")))
	require.NoError(t, unix.Mkfifo(filepath.Join(f.home, "fifo"), 0o600))
	require.NoError(t, os.Link(f.secret, filepath.Join(f.home, "hardlink")))
	h, err := Open(f.home, NoOwner)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	f.h = h
	return f
}

// bothWalks runs fn with openat2 and with the O_NOFOLLOW fallback walk.
func bothWalks(t *testing.T, fn func(t *testing.T)) {
	for _, missing := range []bool{false, true} {
		name := "openat2"
		if missing {
			name = "nofollow-walk"
		}
		t.Run(name, func(t *testing.T) {
			prev := openat2Missing.Load()
			openat2Missing.Store(missing)
			t.Cleanup(func() { openat2Missing.Store(prev) })
			fn(t)
		})
	}
}

func TestReadRefusals(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		tests := []struct {
			name    string
			path    string
			control string // a plain os.ReadFile of this succeeds: the trap is real
			wantErr error
		}{
			{name: "final symlink", path: "link", control: "link", wantErr: ErrSymlink},
			{name: "intermediate symlink", path: "ldir/secret", control: "ldir/secret", wantErr: ErrSymlink},
			{name: "nested intermediate symlink", path: "dir/up/secret", control: "dir/up/secret", wantErr: ErrSymlink},
			{name: "dotdot stays in the home", path: "../outside/secret", control: "../outside/secret", wantErr: fs.ErrNotExist},
			{name: "absolute path is rooted at the home", path: f.secret, wantErr: fs.ErrNotExist},
			{name: "FIFO", path: "fifo", wantErr: ErrNotRegular},
			{name: "hard link to an outside file", path: "hardlink", control: "hardlink", wantErr: ErrHardLink},
			{name: "directory", path: "dir", wantErr: ErrIsDir},
			{name: "file under a file", path: "dir/file/x", wantErr: ErrNotDir},
			{name: "NUL", path: "a\x00", wantErr: ErrInvalidPath},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.control != "" {
					b, err := os.ReadFile(filepath.Join(f.home, tt.control))
					require.NoError(t, err, "control")
					require.Equal(t, "s3cret", string(b), "control")
				}
				b, err := f.h.Read(ctx, tt.path, 0, -1)
				require.ErrorIs(t, err, tt.wantErr)
				require.Nil(t, b)
			})
		}
	})
}

func TestWriteRefusals(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		tests := []struct {
			name    string
			path    string
			wantErr error
		}{
			{name: "final symlink", path: "link", wantErr: ErrSymlink},
			{name: "intermediate symlink", path: "ldir/victim", wantErr: ErrSymlink},
			{name: "intermediate symlink with parents", path: "ldir/new/x", wantErr: ErrSymlink},
			{name: "FIFO", path: "fifo", wantErr: ErrNotRegular},
			{name: "hard link", path: "hardlink", wantErr: ErrHardLink},
			{name: "the home", path: "/", wantErr: ErrIsDir},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := f.h.Write(ctx, tt.path, []byte("pwned"), WriteOptions{Parents: true})
				require.ErrorIs(t, err, tt.wantErr)
				for _, p := range []string{f.victim, f.secret} {
					b, err := os.ReadFile(p)
					require.NoError(t, err)
					require.NotEqual(t, "pwned", string(b))
				}
				require.NoDirExists(t, filepath.Join(f.outside, "new"))
			})
		}
	})
}

func TestDeviceNodeRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a device node needs CAP_MKNOD (root); the FIFO cases cover the unprivileged run")
	}
	f := newFixture(t)
	dev := filepath.Join(f.home, "null")
	require.NoError(t, unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	_, err := os.ReadFile(dev)
	require.NoError(t, err, "control: the device reads")
	_, err = f.h.Read(context.Background(), "null", 0, -1)
	require.ErrorIs(t, err, ErrNotRegular)
	_, err = f.h.Write(context.Background(), "null", []byte("x"), WriteOptions{})
	require.ErrorIs(t, err, ErrNotRegular)
	st, err := f.h.Stat(context.Background(), "null")
	require.NoError(t, err)
	require.Equal(t, TypeOther, st.Type)
}

func TestReadWriteListStatDeleteMkdir(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()

		n, err := f.h.Write(ctx, "/a/b/new.txt", []byte("0123456789"), WriteOptions{Parents: true})
		require.NoError(t, err)
		require.EqualValues(t, 10, n)
		fi, err := os.Stat(filepath.Join(f.home, "a", "b", "new.txt"))
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
		di, err := os.Stat(filepath.Join(f.home, "a"))
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o700), di.Mode().Perm())

		// A ranged write keeps the rest; a plain write truncates.
		n, err = f.h.Write(ctx, "a/b/new.txt", []byte("XY"), WriteOptions{Offset: 3, Ranged: true})
		require.NoError(t, err)
		require.EqualValues(t, 10, n)
		b, err := f.h.Read(ctx, "a/b/new.txt", 2, 4)
		require.NoError(t, err)
		require.Equal(t, "2XY5", string(b))
		n, err = f.h.Write(ctx, "a/b/new.txt", []byte("short"), WriteOptions{})
		require.NoError(t, err)
		require.EqualValues(t, 5, n)

		ents, err := f.h.List(ctx, "")
		require.NoError(t, err)
		types := map[string]EntryType{}
		for _, e := range ents {
			types[e.Name] = e.Type
		}
		require.Equal(t, map[string]EntryType{"a": TypeDir, "dir": TypeDir, "fifo": TypeOther, "hardlink": TypeFile,
			"ldir": TypeSymlink, "link": TypeSymlink}, types)
		_, err = f.h.List(ctx, "ldir")
		require.ErrorIs(t, err, ErrSymlink)

		st, err := f.h.Stat(ctx, "link")
		require.NoError(t, err)
		require.Equal(t, TypeSymlink, st.Type, "stat reports the link, not its target")

		// Deleting a link removes only the link.
		require.NoError(t, f.h.Delete(ctx, "ldir", true))
		require.FileExists(t, f.secret)
		require.FileExists(t, f.victim)
		require.Error(t, f.h.Delete(ctx, "a", false), "non-empty directory needs recursive")
		require.NoError(t, f.h.Delete(ctx, "a", true))
		require.NoDirExists(t, filepath.Join(f.home, "a"))
		require.ErrorIs(t, f.h.Delete(ctx, "/../", true), ErrIsHome)
		require.DirExists(t, f.home)

		require.NoError(t, f.h.Mkdir(ctx, "x/y/z"))
		require.DirExists(t, filepath.Join(f.home, "x", "y", "z"))
		require.ErrorIs(t, f.h.Mkdir(ctx, "link/z"), ErrSymlink)
	})
}

// TestRecursiveDeleteSkipsSymlinkedTrees: a symlink inside a deleted tree
// is unlinked, its target untouched.
func TestRecursiveDeleteSkipsSymlinkedTrees(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.Symlink(f.outside, filepath.Join(f.home, "dir", "out")))
	require.NoError(t, f.h.Delete(context.Background(), "dir", true))
	require.FileExists(t, f.secret)
	require.FileExists(t, f.victim)
}

func TestNewFilesOwnedBySandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another uid needs root; an ordinary worker's sandboxes share its uid")
	}
	f := newFixture(t)
	h, err := Open(f.home, Owner{UID: 4242, GID: 4343})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	_, err = h.Write(context.Background(), "p/q/file", []byte("x"), WriteOptions{Parents: true})
	require.NoError(t, err)
	for _, p := range []string{"p", "p/q", "p/q/file"} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(filepath.Join(f.home, p), &st))
		require.EqualValues(t, 4242, st.Uid, p)
		require.EqualValues(t, 4343, st.Gid, p)
	}
}

// TestSwapRace swaps a directory of the home for a symlink to the outside
// while reads and writes go through it: no call may ever see the outside.
func TestSwapRace(t *testing.T) {
	bothWalks(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		sw := filepath.Join(f.home, "sw")
		real := filepath.Join(f.home, "real")
		require.NoError(t, os.Mkdir(real, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(real, "secret"), []byte("inside"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(real, "victim"), []byte("inside"), 0o600))

		fsw := filepath.Join(f.home, "fsw")
		// A singly linked outside file: the hard-link check must not be
		// what stops a followed symlink here.
		other := filepath.Join(f.outside, "other")
		require.NoError(t, os.WriteFile(other, []byte("s3cret"), 0o600))
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			// fsw alternates between a regular file and a symlink out.
			defer wg.Done()
			for !stop.Load() {
				_ = os.WriteFile(fsw+".tmp", []byte("inside"), 0o600)
				_ = os.Rename(fsw+".tmp", fsw)
				_ = os.Symlink(other, fsw+".lnk")
				_ = os.Rename(fsw+".lnk", fsw)
				_ = unix.Mkfifo(fsw+".fifo", 0o600)
				_ = os.Rename(fsw+".fifo", fsw)
			}
		}()
		go func() {
			defer wg.Done()
			// sw alternates between a real directory and a symlink out.
			for !stop.Load() {
				_ = os.Rename(real, sw)
				_ = os.Rename(sw, real)
				_ = os.Symlink(f.outside, sw)
				_ = os.Remove(sw)
			}
		}()
		var reads, leaks, controlLeaks int
		// At least 3000 rounds, and on until the control has been fooled
		// once: on a loaded machine the swapper may not get the CPU at the
		// right moment for a while (a .ci/run beside another saw none in
		// 3000), and a race the control never lost proves nothing.
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; i < 3000 || controlLeaks == 0 && time.Now().Before(deadline); i++ {
			// Control: a plain path-based read does get fooled.
			if b, err := os.ReadFile(filepath.Join(sw, "secret")); err == nil && string(b) == "s3cret" {
				controlLeaks++
			}
			b, err := f.h.Read(ctx, "sw/secret", 0, -1)
			if err == nil {
				reads++
				if string(b) != "inside" {
					leaks++
				}
			}
			_, _ = f.h.Write(ctx, "sw/victim", []byte("pwned"), WriteOptions{})
			// Only ever "inside" or our own "pwned" may come back.
			if b, err := f.h.Read(ctx, "fsw", 0, -1); err == nil && string(b) != "inside" && string(b) != "pwned" {
				leaks++
			}
			_, _ = f.h.Write(ctx, "fsw", []byte("pwned"), WriteOptions{})
		}
		stop.Store(true)
		wg.Wait()
		require.Positive(t, controlLeaks, "control: the race must be real for plain reads")
		require.Zero(t, leaks, "a read went through the swapped symlink")
		b, err := os.ReadFile(f.victim)
		require.NoError(t, err)
		require.Equal(t, "intact", string(b), "a write went through the swapped symlink")
		b, err = os.ReadFile(other)
		require.NoError(t, err)
		require.Equal(t, "s3cret", string(b), "a write went through the swapped final symlink")
		t.Logf("%d of 3000 reads landed inside the real directory; %d plain reads leaked", reads, controlLeaks)
	})
}

// TestSwapAfterCheck swaps the final component right after the type check,
// deterministically: the open and the fstat after it must still refuse.
func TestSwapAfterCheck(t *testing.T) {
	other := func(f fixture) string { return filepath.Join(f.outside, "other") }
	tests := []struct {
		name    string
		swap    func(t *testing.T, f fixture, path string)
		wantErr error
	}{
		{"to a symlink", func(t *testing.T, f fixture, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Symlink(other(f), path))
		}, ErrSymlink},
		{"to a FIFO", func(t *testing.T, f fixture, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, unix.Mkfifo(path, 0o600))
		}, ErrNotRegular},
	}
	for _, tt := range tests {
		for _, op := range []string{"read", "write"} {
			t.Run(tt.name+" "+op, func(t *testing.T) {
				f := newFixture(t)
				require.NoError(t, os.WriteFile(other(f), []byte("s3cret"), 0o600))
				path := filepath.Join(f.home, "target")
				require.NoError(t, os.WriteFile(path, []byte("inside"), 0o600))
				testHookAfterCheck = func(int, string) { tt.swap(t, f, path) }
				t.Cleanup(func() { testHookAfterCheck = nil })
				var err error
				if op == "read" {
					var b []byte
					b, err = f.h.Read(context.Background(), "target", 0, -1)
					require.Nil(t, b)
				} else {
					_, err = f.h.Write(context.Background(), "target", []byte("pwned"), WriteOptions{})
				}
				require.ErrorIs(t, err, tt.wantErr)
				b, rerr := os.ReadFile(other(f))
				require.NoError(t, rerr)
				require.Equal(t, "s3cret", string(b))
			})
		}
	}
}
