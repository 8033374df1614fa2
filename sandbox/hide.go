package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Spec.Hide: host directories a run must not see under paths it is
// shown. The worker resolves them here (resolveHidden) for both modes;
// namespace mode mounts an empty read-only tmpfs over each in the view
// (planView, initproc.NSConfig.Hide), Landlock-only mode rewrites its
// rules so that none covers them (hideFromRules).

// checkHidePath is the lexical check of Spec.Hide[i] (validateSpec):
// absolute, clean, not /, not in the sandbox's own /proc and /dev, not
// overlapping a caller's scratch directory, holding no ReadOnly path.
func checkHidePath(spec Spec, i int) error {
	p := spec.Hide[i]
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: Hide[%d]: %q %s", ErrInvalidSpec, i, p, fmt.Sprintf(format, args...))
	}
	switch {
	case !filepath.IsAbs(p):
		return bad("must be absolute")
	case filepath.Clean(p) != p:
		return bad("must be clean (%q)", filepath.Clean(p))
	case p == "/" || within(p, "/proc") || within(p, "/dev"):
		return bad("cannot be hidden: /, /proc and /dev are not host trees a run is shown")
	}
	if spec.Scratch != "" {
		if s := filepath.Clean(spec.Scratch); overlaps(p, s) {
			return bad("overlaps the scratch directory %q", s)
		}
	}
	for _, ro := range spec.ReadOnly {
		if c := filepath.Clean(ro); within(c, p) {
			return bad("holds the read-only path %q", ro)
		}
	}
	return nil
}

// resolveHidden resolves spec.Hide as the run would reach them: symlinks
// followed (filepath.EvalSymlinks, as for ReadOnly paths), missing paths
// dropped (nothing to hide), those inside another dropped (the outer one
// hides them), sorted. It refuses (ErrInvalidSpec, naming Hide[i]) a
// hidden path that resolves to /, into /proc or /dev, onto, into or
// around one of keep (the home, the scratch root: they stay visible and
// writable), to something other than a directory, or around a ReadOnly
// path (resolved too). Nil when nothing is hidden.
func resolveHidden(spec Spec, keep ...string) ([]string, error) {
	if len(spec.Hide) == 0 {
		return nil, nil
	}
	var ro []string
	for _, p := range spec.ReadOnly {
		ro = append(ro, filepath.Clean(p))
		if real, err := filepath.EvalSymlinks(p); err == nil {
			ro = append(ro, real)
		}
	}
	var homes []string
	for _, k := range keep {
		if k == "" {
			continue
		}
		homes = append(homes, filepath.Clean(k))
		if real, err := filepath.EvalSymlinks(k); err == nil {
			homes = append(homes, real)
		}
	}
	var out []string
	for i, p := range spec.Hide {
		if err := checkHidePath(spec, i); err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, &SetupError{Step: "resolve hidden path", Path: p, Err: err}
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: Hide[%d]: %q (resolved %q) %s", ErrInvalidSpec, i, p, real, fmt.Sprintf(format, args...))
		}
		if real == "/" || within(real, "/proc") || within(real, "/dev") {
			return nil, bad("cannot be hidden: /, /proc and /dev are not host trees a run is shown")
		}
		for _, h := range homes {
			if overlaps(real, h) {
				return nil, bad("overlaps %q, which the run must see and write", h)
			}
		}
		for _, r := range ro {
			if within(r, real) {
				return nil, bad("holds the read-only path %q", r)
			}
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, &SetupError{Step: "resolve hidden path", Path: real, Err: err}
		}
		if !fi.IsDir() {
			return nil, bad("is not a directory")
		}
		out = append(out, real)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// Sorted, a path's ancestors come before it.
	outer := out[:0]
	for _, h := range out {
		if len(outer) == 0 || !within(h, outer[len(outer)-1]) {
			outer = append(outer, h)
		}
	}
	return outer, nil
}

// hideFromRules rewrites rules, the host paths of read or read+exec
// rules of a Landlock-only policy, so that none covers a hidden path
// (resolved, resolveHidden). Landlock cannot deny below an allowed
// directory, so a rule whose path (resolved: a rule on a symlink is one
// on its target, as for the system dirs' merged-/usr links) is an
// ancestor of a hidden path is replaced by rules on that directory's
// entries, recursing along the way to the hidden path, which is left
// without a rule with everything below it. A rule inside a hidden path
// is dropped; others are kept as they are. An entry that is a symlink
// gets no rule: the rule on the ancestor never granted a link's target
// through the link (Landlock checks the path the link resolves to), a
// target inside the ancestor keeps a rule of its own, and a rule on the
// link would grant its target, maybe the hidden path or one of its
// ancestors, or a tree the policy never allowed. Missing rule paths are
// dropped (the init skips them). The directories on the way lose their
// own rule: they cannot be listed, though their other entries stay
// readable; an entry created after this is not covered (fail closed).
func hideFromRules(rules, hidden []string) ([]string, error) {
	if len(hidden) == 0 {
		return rules, nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	var expand func(dir string) error
	expand = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return &SetupError{Step: "expand landlock rule around hidden path", Path: dir, Err: err}
		}
		for _, e := range ents {
			c := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0, hiddenAt(c, hidden):
			case holdsHidden(c, hidden):
				if err := expand(c); err != nil {
					return err
				}
			default:
				add(c)
			}
		}
		return nil
	}
	for _, r := range rules {
		real, err := filepath.EvalSymlinks(r)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			continue
		case err != nil:
			return nil, &SetupError{Step: "resolve landlock rule", Path: r, Err: err}
		case insideHidden(real, hidden):
		case holdsHidden(real, hidden):
			if err := expand(real); err != nil {
				return nil, err
			}
		default:
			add(r)
		}
	}
	return out, nil
}

// hiddenAt: p is one of the hidden paths.
func hiddenAt(p string, hidden []string) bool { return slices.Contains(hidden, p) }

// insideHidden: p is a hidden path or below one.
func insideHidden(p string, hidden []string) bool {
	return slices.ContainsFunc(hidden, func(h string) bool { return within(p, h) })
}

// holdsHidden: a hidden path lies strictly below directory p.
func holdsHidden(p string, hidden []string) bool {
	return slices.ContainsFunc(hidden, func(h string) bool { return h != p && within(h, p) })
}

// within reports whether p is dir or below it (cleaned absolute paths).
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// overlaps: a is b, or one lies inside the other.
func overlaps(a, b string) bool { return within(a, b) || within(b, a) }
