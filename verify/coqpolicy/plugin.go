package coqpolicy

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed" // the plugin's source
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed warren_policy.ml
var source []byte

// SourceDigest identifies the plugin's source: part of a Coq profile's
// fingerprint, since the plugin decides verdicts.
func SourceDigest() string {
	sum := sha256.Sum256(source)
	return hex.EncodeToString(sum[:])
}

// ErrBuild means the plugin could not be compiled on this host.
var ErrBuild = errors.New("the Coq policy plugin cannot be built")

// Plugin is a built policy plugin: Dir holds warren_policy.cmxs and
// prelude.v, readable by the sandbox's users.
type Plugin struct {
	Dir string
}

const (
	cmxs    = "warren_policy.cmxs"
	prelude = "prelude.v"
	// preludeText loads the plugin. Local: a library compiled after it
	// does not record the plugin among its dependencies, so Requiring the
	// proof later (the trusted step) neither needs nor loads it.
	preludeText = "Local Declare ML Module \"warren_policy:warren.policy\".\n"
)

// Args are the coqc arguments that load the plugin before the file it
// compiles.
func (p *Plugin) Args() []string {
	return []string{"-I", p.Dir, "-l", filepath.Join(p.Dir, prelude)}
}

// Build compiles the plugin with ocamlfind (an absolute path, or a name
// looked up on PATH) into dir, an empty directory private to the caller.
// The directory and the plugin are made readable by everyone (a root
// worker's sandboxes run as other users).
func Build(ctx context.Context, dir, ocamlfind string) (*Plugin, error) {
	p := &Plugin{Dir: dir}
	if err := p.build(ctx, ocamlfind); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plugin) build(ctx context.Context, ocamlfind string) error {
	if err := os.WriteFile(filepath.Join(p.Dir, "warren_policy.ml"), source, 0o644); err != nil {
		return fmt.Errorf("%w: %v", ErrBuild, err)
	}
	if err := os.WriteFile(filepath.Join(p.Dir, prelude), []byte(preludeText), 0o644); err != nil {
		return fmt.Errorf("%w: %v", ErrBuild, err)
	}
	cmd := exec.CommandContext(ctx, ocamlfind, "ocamlopt", "-thread", "-rectypes",
		"-package", "coq-core.vernac,coq-core.stm", "-shared", "-o", cmxs, "warren_policy.ml")
	cmd.Dir = p.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w with %s (%v): %s%s", ErrBuild, ocamlfind, err, lastLines(out.String(), 6), buildHint(out.String()))
	}
	// Keep only what coqc loads; the objects are not needed at run time.
	for _, ext := range []string{".cmi", ".cmx", ".o"} {
		_ = os.Remove(filepath.Join(p.Dir, "warren_policy"+ext))
	}
	if err := os.Chmod(filepath.Join(p.Dir, cmxs), 0o644); err != nil {
		return fmt.Errorf("%w: %v", ErrBuild, err)
	}
	if err := os.Chmod(p.Dir, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrBuild, err)
	}
	return nil
}

// buildHint says what to install when the error is a missing package.
func buildHint(out string) string {
	if strings.Contains(out, "not found") || strings.Contains(out, "Unbound module") {
		return "\nthe Coq development files are missing: install libcoq-core-ocaml-dev (Debian) or the coq-core package of this Coq's opam switch"
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
