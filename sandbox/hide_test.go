package sandbox

import (
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestHideValidation: Spec.Hide entries the run cannot honour are
// refused with ErrInvalidSpec naming the entry; a missing path is
// nothing to hide. The lexical checks (validateSpec) and those on the
// resolved host paths (validateHidden) both; the control is a valid
// spec.
func TestHideValidation(t *testing.T) {
	t.Parallel()
	tr := newHideTree(t)
	scratch := hostDir(t)
	root := hostDir(t)
	r, err := New(Config{Isolation: IsolationNamespace, ScratchRoot: filepath.Join(root, "scratch")})
	require.NoError(t, err)
	file := filepath.Join(tr.tc, "pub", "file")
	link := func(name, target string) string {
		p := filepath.Join(hostDir(t), name)
		require.NoError(t, os.Symlink(target, p))
		return p
	}
	for _, tc := range []struct {
		name string
		spec Spec
		err  string // "" valid
	}{
		{"valid", Spec{ReadOnly: []string{tr.tc}, Hide: []string{tr.secret}}, ""},
		{"missing: nothing to hide", Spec{Hide: []string{filepath.Join(tr.tc, "nope"), filepath.Join(file, "below-a-file")}}, ""},
		{"beside a read-only path", Spec{ReadOnly: []string{filepath.Join(tr.tc, "pub")}, Hide: []string{tr.secret}}, ""},
		{"relative", Spec{Hide: []string{"/usr/share", "usr/lib"}}, `Hide[1]: "usr/lib" must be absolute`},
		{"not clean", Spec{Hide: []string{"/usr/lib/../share"}}, `Hide[0]: "/usr/lib/../share" must be clean`},
		{"trailing slash", Spec{Hide: []string{"/usr/share/"}}, `Hide[0]: "/usr/share/" must be clean`},
		{"root", Spec{Hide: []string{"/"}}, `Hide[0]: "/" cannot be hidden`},
		{"proc", Spec{Hide: []string{"/proc/sys"}}, `Hide[0]: "/proc/sys" cannot be hidden`},
		{"dev", Spec{Hide: []string{"/dev"}}, `Hide[0]: "/dev" cannot be hidden`},
		{"the scratch directory", Spec{Scratch: scratch, Hide: []string{scratch}}, "overlaps the scratch directory"},
		{"inside the scratch directory", Spec{Scratch: scratch, Hide: []string{filepath.Join(scratch, "x")}}, "overlaps the scratch directory"},
		{"around the scratch directory", Spec{Scratch: scratch, Hide: []string{filepath.Dir(scratch)}}, "overlaps the scratch directory"},
		{"around the scratch root", Spec{Hide: []string{root}}, "which the run must see and write"},
		{"holds a read-only path", Spec{ReadOnly: []string{filepath.Join(tr.secret, "deep")}, Hide: []string{tr.secret}}, "holds the read-only path"},
		{"is a read-only path", Spec{ReadOnly: []string{tr.secret}, Hide: []string{tr.secret}}, "holds the read-only path"},
		{"holds a read-only path through a link", Spec{ReadOnly: []string{filepath.Join(tr.secret, "deep")}, Hide: []string{filepath.Join(tr.tc, "to-secret")}}, "holds the read-only path"},
		{"a link to /", Spec{Hide: []string{link("root", "/")}}, "cannot be hidden"},
		{"a link into /proc", Spec{Hide: []string{link("proc", "/proc/self")}}, "cannot be hidden"},
		{"a file", Spec{Hide: []string{file}}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateSpec(tc.spec)
			if err == nil {
				err = r.validateHidden(tc.spec)
			}
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestRunRefusesInvalidHide: Run refuses an invalid Spec.Hide in each
// isolated mode before anything runs; the control runs.
func TestRunRefusesInvalidHide(t *testing.T) {
	for _, m := range []usageMode{runModes()[0], {"landlock", false, func(t *testing.T) (*Runner, Isolation) {
		llRequire(t, landlockMinABIDefault)
		return llRunner(t, 1_900_101_000), IsolationLandlock
	}}} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			r, iso := m.runner(t)
			o := modeRun(t, r, iso, Spec{Argv: []string{"/bin/true"}, Hide: []string{"/nonexistent/dir"}})
			require.Equal(t, 0, o.res.ExitCode, "control: %s", o.stderr)
			_, err := r.Run(t.Context(), Spec{Argv: []string{"/bin/true"}, Isolation: iso, Hide: []string{"/usr/share", "/"}})
			require.ErrorIs(t, err, ErrInvalidSpec)
			require.ErrorContains(t, err, "Hide[1]")
		})
	}
}

// TestHideFromRules: the Landlock-only expansion replaces a rule on an
// ancestor of a hidden path by rules on its entries, recursing along the
// way, leaves the hidden path and links without a rule, expands a rule
// on a link to such an ancestor at its target, drops a rule inside a
// hidden path or missing, and keeps the others as they are.
func TestHideFromRules(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mk := func(paths ...string) {
		for _, p := range paths {
			p = filepath.Join(base, p)
			if strings.HasSuffix(p, "/") || filepath.Ext(p) == "" {
				require.NoError(t, os.MkdirAll(p, 0o755))
			} else {
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, nil, 0o644))
			}
		}
	}
	mk("usr/bin/sh.x", "usr/lib/ocaml/coq/theories/Nat.v", "usr/lib/ocaml/stdlib/list.ml", "usr/lib/ocaml/config.x", "usr/lib/libc.so", "usr/share/doc", "other/x.y")
	for link, target := range map[string]string{
		"lib":                     "usr/lib",        // a merged-/usr link: a rule on it is one on usr/lib
		"usr/lib/ocaml/coq-link":  "coq",            // into the hidden path
		"usr/lib/ocaml-up":        "ocaml",          // to one of its ancestors
		"usr/lib/ocaml/to-other":  "../../../other", // outside every rule
		"usr/lib/ocaml/to-stdlib": "stdlib",         // beside it
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(base, link)))
	}
	p := func(rel ...string) []string {
		out := make([]string, len(rel))
		for i, r := range rel {
			out[i] = filepath.Join(base, r)
		}
		return out
	}
	hidden := p("usr/lib/ocaml/coq")
	for _, tc := range []struct {
		name        string
		rules, want []string
	}{
		{"no rule covers it", p("usr/bin", "other"), p("usr/bin", "other")},
		{"ancestor expanded", p("usr"), p("usr/bin", "usr/lib/libc.so", "usr/lib/ocaml/config.x", "usr/lib/ocaml/stdlib", "usr/share")},
		{"link to an ancestor expanded at its target", p("lib"), p("usr/lib/libc.so", "usr/lib/ocaml/config.x", "usr/lib/ocaml/stdlib")},
		{"both, once", p("usr/lib", "lib"), p("usr/lib/libc.so", "usr/lib/ocaml/config.x", "usr/lib/ocaml/stdlib")},
		{"the hidden path and below dropped", p("usr/lib/ocaml/coq", "usr/lib/ocaml/coq/theories", "usr/lib/ocaml/coq-link", "usr/bin"), p("usr/bin")},
		{"missing dropped", p("nope", "usr/bin"), p("usr/bin")},
		{"unrelated link kept", p("usr/lib/ocaml/to-stdlib"), p("usr/lib/ocaml/to-stdlib")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hideFromRules(tc.rules, hidden)
			require.NoError(t, err)
			require.ElementsMatch(t, tc.want, got)
		})
	}
	got, err := hideFromRules(p("usr"), nil)
	require.NoError(t, err)
	require.Equal(t, p("usr"), got, "control: nothing hidden, nothing changed")
}

// TestWarmKeyHide: views differing only in Spec.Hide (or, in namespace
// mode, Spec.TmpInHome) have different warm keys, so a warm sandbox built
// without the hide never serves a run that asks for it, nor the reverse;
// a key gives back the spec it was made from.
func TestWarmKeyHide(t *testing.T) {
	t.Parallel()
	base := Spec{ReadOnly: []string{"/usr/lib/ocaml"}}
	hide := base
	hide.Hide = []string{"/usr/lib/ocaml/coq"}
	other := base
	other.Hide = []string{"/usr/lib/ocaml/coq", "/usr/share"}
	tmp := base
	tmp.TmpInHome = true
	for _, m := range []mode{namespaceMode{}, landlockMode{}} {
		t.Run(string(m.isolation()), func(t *testing.T) {
			require.Equal(t, m.warmKey(base), m.warmKey(Spec{ReadOnly: []string{"/usr/lib/ocaml"}}), "control: equal specs, equal keys")
			require.NotEqual(t, m.warmKey(base), m.warmKey(hide))
			require.NotEqual(t, m.warmKey(hide), m.warmKey(other))
			for _, s := range []Spec{base, hide, other, tmp} {
				k := m.warmKey(s)
				require.Equal(t, k, m.warmKey(k.spec()), "the key's spec has the key")
			}
		})
	}
	require.NotEqual(t, namespaceMode{}.warmKey(base), namespaceMode{}.warmKey(tmp), "namespace: /tmp is the home's or not")
	require.Equal(t, landlockMode{}.warmKey(base), landlockMode{}.warmKey(tmp), "Landlock-only: TmpInHome changes nothing")
}

// tmpProbe writes /tmp/a and /dev/shm/b and $TMPDIR/c, printing "OK" or
// "ERR <errno>" for each.
var tmpProbe = py(`
import os
for p in ("/tmp/a", "/dev/shm/b", os.path.join(os.environ["TMPDIR"], "c")):
    try:
        with open(p, "w") as f: f.write("x")
        print("OK")
    except OSError as e:
        print("ERR", e.errno)
`)

// TestTmpInHome: with Spec.TmpInHome a namespace-mode run's /tmp and
// /dev/shm are its home's .tmp and .shm: what it writes there is in the
// caller's scratch directory after the run, given back to its owner;
// without it (the control) neither is. In Landlock-only mode /tmp stays
// unwritable with it (TMPDIR is the home's .tmp in any case). A bounded
// fresh home has them in the home either way (Spec.Finished sees them).
func TestTmpInHome(t *testing.T) {
	for _, m := range []usageMode{
		{"namespace", false, func(t *testing.T) (*Runner, Isolation) { return nsRunner(t), IsolationNamespace }},
		runModes()[len(runModes())-1], // layered cold
		{"landlock", false, func(t *testing.T) (*Runner, Isolation) {
			llRequire(t, landlockMinABIDefault)
			return llRunner(t, 1_900_101_010), IsolationLandlock
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			r, iso := m.runner(t)
			for _, tmpInHome := range []bool{false, true} {
				t.Run(fmt.Sprintf("TmpInHome=%v", tmpInHome), func(t *testing.T) {
					dir := hostDir(t)
					o := modeRun(t, r, iso, Spec{Argv: tmpProbe, Scratch: dir, TmpInHome: tmpInHome})
					require.Equal(t, 0, o.res.ExitCode, o.stderr)
					lines := strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n")
					if landlockOnly(o.res) {
						eacces := fmt.Sprintf("ERR %d", unix.EACCES)
						require.Equal(t, []string{eacces, eacces, "OK"}, lines, "Landlock-only: only the home is writable")
						require.FileExists(t, filepath.Join(dir, ".tmp", "c"))
						require.NoFileExists(t, filepath.Join(dir, ".shm", "b"))
						return
					}
					require.Equal(t, []string{"OK", "OK", "OK"}, lines)
					if !tmpInHome {
						require.NoDirExists(t, filepath.Join(dir, ".tmp"), "control: /tmp is private")
						require.NoDirExists(t, filepath.Join(dir, ".shm"), "control: /dev/shm is private")
						return
					}
					for _, f := range []string{".tmp/a", ".tmp/c", ".shm/b"} {
						p := filepath.Join(dir, f)
						require.FileExists(t, p)
						fi, err := os.Lstat(p)
						require.NoError(t, err)
						require.Equal(t, uint32(os.Getuid()), fi.Sys().(*syscall.Stat_t).Uid, "%s is given back to the directory's owner", f)
					}
					// What the view had to make there (the mount point of the
					// home, at its host path under /tmp) is gone: only the run's.
					require.Equal(t, []string{"a", "c"}, dirNames(t, filepath.Join(dir, ".tmp")))
					require.Equal(t, []string{"b"}, dirNames(t, filepath.Join(dir, ".shm")))
				})
			}
			if iso == IsolationLandlock {
				return // a bounded home's /tmp is the namespace view's (Landlock-only: TMPDIR, covered above)
			}
			t.Run("bounded home", func(t *testing.T) {
				var seen []string
				o := modeRun(t, r, iso, Spec{Argv: tmpProbe, TmpInHome: true, Limits: Limits{Disk: 16 << 20}, Finished: func(home string) {
					for _, f := range []string{".tmp/a", ".shm/b", ".tmp/c"} {
						if _, err := os.Lstat(filepath.Join(home, f)); err == nil {
							seen = append(seen, f)
						}
					}
				}})
				require.Equal(t, 0, o.res.ExitCode, o.stderr)
				require.Equal(t, []string{".tmp/a", ".shm/b", ".tmp/c"}, seen)
			})
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names
}
