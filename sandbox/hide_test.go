package sandbox

import (
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// hideProbe prints, one line each, read(p) ("OK <its first 8 bytes in
// hex>" or "ERR <errno>") for the reads and listdir(p) ("LS <sorted
// names>" or "ERR <errno>") for the lists.
func hideProbe(reads, lists []string) []string {
	return py(fmt.Sprintf(`
import os
for p in %s:
    try:
        with open(p, "rb") as f: print("OK", f.read(8).hex())
    except OSError as e:
        print("ERR", e.errno)
for p in %s:
    try:
        print("LS", ",".join(sorted(os.listdir(p))))
    except OSError as e:
        print("ERR", e.errno)
`, pyList(reads), pyList(lists)))
}

func pyList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// hideTree is a toolchain tree the tests show read-only and hide part of:
//
//	tc/pub/file          "public"      a sibling that stays readable
//	tc/secret/top        "s3cret-top"  the hidden directory
//	tc/secret/deep/file  "s3cret-deep"
//	tc/to-secret -> secret             a link into it
//	tc/to-pub -> pub                   a link beside it
type hideTree struct{ tc, secret string }

func newHideTree(t *testing.T) hideTree {
	t.Helper()
	tc := hostDir(t)
	for name, content := range map[string]string{"pub/file": "public", "secret/top": "s3cret-top", "secret/deep/file": "s3cret-deep"} {
		p := filepath.Join(tc, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink("secret", filepath.Join(tc, "to-secret")))
	require.NoError(t, os.Symlink("pub", filepath.Join(tc, "to-pub")))
	return hideTree{tc: tc, secret: filepath.Join(tc, "secret")}
}

// hideCase is one way to hide part of what a run is shown: the spec's
// ReadOnly and Hide, the hidden files the run reads (and the hidden
// directory it lists) and a sibling that must stay readable.
type hideCase struct {
	name      string
	readOnly  []string
	hide      []string
	hidden    []string // files below the hidden directory (or through a link into it)
	hiddenDir string
	sibling   string // a file beside it, and its first 8 bytes in hex
	siblingIs string
}

func hideCases(t *testing.T) []hideCase {
	t.Helper()
	tr := newHideTree(t)
	cases := []hideCase{
		{
			name: "toolchain subdirectory", readOnly: []string{tr.tc}, hide: []string{tr.secret},
			hidden:    []string{filepath.Join(tr.secret, "top"), filepath.Join(tr.secret, "deep", "file"), filepath.Join(tr.tc, "to-secret", "top")},
			hiddenDir: tr.secret, sibling: filepath.Join(tr.tc, "to-pub", "file"), siblingIs: hex8(t, filepath.Join(tr.tc, "pub", "file")),
		},
		{
			// Resolved as ReadOnly paths are: the target is hidden.
			name: "hidden through a symlink", readOnly: []string{tr.tc}, hide: []string{filepath.Join(tr.tc, "to-secret")},
			hidden:    []string{filepath.Join(tr.secret, "deep", "file"), filepath.Join(tr.tc, "to-secret", "top")},
			hiddenDir: tr.secret, sibling: filepath.Join(tr.tc, "pub", "file"), siblingIs: hex8(t, filepath.Join(tr.tc, "pub", "file")),
		},
	}
	// A subdirectory of a system directory, whatever the host installed
	// there: /usr/share (FHS) with a file inside it, /usr/bin beside it.
	if f, ok := firstReadableFile("/usr/share", ""); ok {
		cases = append(cases, hideCase{
			name: "system subdirectory", hide: []string{"/usr/share"},
			hidden: []string{f}, hiddenDir: "/usr/share", sibling: python, siblingIs: hex8(t, python),
		})
	}
	// The verify package's case: the Coq stdlib's sources under a visible
	// OCaml tree (when this host has Coq).
	const nat = "/usr/lib/ocaml/coq/theories/Init/Nat.v"
	if _, err := os.Stat(nat); err == nil {
		if f, ok := firstReadableFile("/usr/lib/ocaml", "/usr/lib/ocaml/coq"); ok {
			cases = append(cases, hideCase{
				name: "coq stdlib sources", readOnly: []string{"/usr/lib/ocaml"}, hide: []string{"/usr/lib/ocaml/coq"},
				hidden: []string{nat}, hiddenDir: "/usr/lib/ocaml/coq", sibling: f, siblingIs: hex8(t, f),
			})
		}
	}
	return cases
}

// firstReadableFile is the first (lexical walk) world-readable regular
// file below dir, not below skip, whose directories any uid may traverse.
func firstReadableFile(dir, skip string) (string, bool) {
	found := ""
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p == skip {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if fi.Mode().Perm()&0o005 != 0o005 {
				return filepath.SkipDir
			}
			return nil
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o004 != 0 && fi.Size() > 0 {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	return found, found != ""
}

// hex8 is what hideProbe prints after "OK " for a file.
func hex8(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 8)
	n, _ := io.ReadFull(f, b)
	return hex.EncodeToString(b[:n])
}

// hideModes are runModes plus auto (namespace with the Landlock layer
// here, Landlock-only on a host that refuses namespaces).
func hideModes() []usageMode {
	return append(runModes(), usageMode{"auto", false, func(t *testing.T) (*Runner, Isolation) {
		r, err := startedNew(Config{Isolation: IsolationAuto, ScratchRoot: nsRunner(t).cfg.ScratchRoot})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.Close()) })
		return r, IsolationAuto
	}})
}

// landlockOnly says whether a run had Landlock without namespaces (then
// a hidden path is refused, EACCES; in a namespace view it is an empty
// directory: ENOENT below it, nothing listed).
func landlockOnly(res *Result) bool { return res.InForce == layersLandlockOnly.String() }

// TestHiddenPathsAreNotSeen: in every mode a run shown a tree reads a
// file below a directory of it (the control), and the same run with that
// directory in Spec.Hide cannot read anything below it, directly or
// through a link, nor list it (namespace: empty; Landlock-only: refused),
// while a file beside it stays readable. Warm modes run it again in a
// sandbox built for the hiding spec.
func TestHiddenPathsAreNotSeen(t *testing.T) {
	t.Parallel()
	for _, m := range hideModes() {
		t.Run(m.name, func(t *testing.T) {
			r, iso := m.runner(t)
			for _, tc := range hideCases(t) {
				t.Run(tc.name, func(t *testing.T) {
					lists := []string{tc.hiddenDir}
					control := modeRun(t, r, iso, Spec{Argv: hideProbe(append(tc.hidden, tc.sibling), lists), ReadOnly: tc.readOnly})
					require.Equal(t, 0, control.res.ExitCode, control.stderr)
					lines := strings.Split(strings.TrimSuffix(control.stdout, "\n"), "\n")
					require.Len(t, lines, len(tc.hidden)+2, control.stdout)
					for i, p := range tc.hidden {
						require.True(t, strings.HasPrefix(lines[i], "OK "), "control: %s is readable: %s", p, lines[i])
					}
					require.Equal(t, "OK "+tc.siblingIs, lines[len(tc.hidden)], "control: the sibling")
					require.NotEqual(t, "LS ", lines[len(lines)-1], "control: the directory lists its entries")

					spec := Spec{Argv: hideProbe(append(tc.hidden, tc.sibling), lists), ReadOnly: tc.readOnly, Hide: tc.hide}
					check := func(o probeOut) {
						t.Helper()
						require.Equal(t, 0, o.res.ExitCode, o.stderr)
						lines := strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n")
						require.Len(t, lines, len(tc.hidden)+2, o.stdout)
						errno, list := unix.ENOENT, "LS "
						if landlockOnly(o.res) {
							errno, list = unix.EACCES, fmt.Sprintf("ERR %d", unix.EACCES)
						}
						for i, p := range tc.hidden {
							require.Equal(t, fmt.Sprintf("ERR %d", errno), lines[i], "%s is hidden (%s)", p, o.res.InForce)
						}
						require.Equal(t, "OK "+tc.siblingIs, lines[len(tc.hidden)], "the sibling stays readable (%s)", o.res.InForce)
						require.Equal(t, list, lines[len(lines)-1], "the hidden directory lists nothing (%s)", o.res.InForce)
					}
					check(modeRun(t, r, iso, spec))
					if m.warm {
						waitWarmFor(t, r, iso, spec)
						check(modeRun(t, r, iso, spec))
					}
				})
			}
		})
	}
}

// waitWarmFor waits until r has a warm sandbox of spec's view in mode iso.
func waitWarmFor(t *testing.T, r *Runner, iso Isolation, spec Spec) {
	t.Helper()
	k := landlockMode{}.warmKey(spec)
	if iso != IsolationLandlock {
		spec.Limits = spec.Limits.withDefaults(r.cfg.Defaults)
		k = namespaceMode{}.warmKey(spec)
	}
	require.Eventually(t, func() bool { return r.warm.ready(k) == 1 && r.Warm().Starting == 0 }, 20*time.Second, 2*time.Millisecond, "a warm sandbox of the hiding view")
}

// umountProbe tries, from inside, to undo the cover of p: umount2 (plain
// and detached) and a read-write remount, each "ERR <errno>" or "OK",
// then lists p.
func umountProbe(p string) []string {
	return py(fmt.Sprintf(`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
p = %q.encode()
for call in (lambda: libc.umount2(p, 0), lambda: libc.umount2(p, 2), lambda: libc.mount(None, p, None, 32|4096, None)):
    print("OK" if call() == 0 else "ERR %%d" %% ctypes.get_errno())
print("LS", ",".join(sorted(os.listdir(p.decode()))))
`, p))
}

// TestHiddenPathCannotBeUncovered: in namespace mode (alone and layered)
// the task can neither unmount the cover of a hidden path nor remount it
// read-write (it has no capabilities); the directory stays empty. The
// control: the tree's directory is listed without Spec.Hide.
func TestHiddenPathCannotBeUncovered(t *testing.T) {
	for _, m := range []usageMode{
		{"namespace", false, func(t *testing.T) (*Runner, Isolation) { return nsRunner(t), IsolationNamespace }},
		runModes()[len(runModes())-1], // layered cold
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			r, iso := m.runner(t)
			tr := newHideTree(t)
			o := modeRun(t, r, iso, Spec{Argv: umountProbe(tr.secret), ReadOnly: []string{tr.tc}})
			require.Equal(t, "LS deep,top", lastLine(o.stdout), "control: %s", o.stderr)

			o = modeRun(t, r, iso, Spec{Argv: umountProbe(tr.secret), ReadOnly: []string{tr.tc}, Hide: []string{tr.secret}})
			require.Equal(t, 0, o.res.ExitCode, o.stderr)
			eperm := fmt.Sprintf("ERR %d", unix.EPERM)
			require.Equal(t, []string{eperm, eperm, eperm, "LS "}, strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n"), "in force: %s", o.res.InForce)
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}
