package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

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
				err = validateHidden(tc.spec, r.cfg.ScratchRoot)
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
