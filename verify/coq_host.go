package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/warrenhq/warren/verify/coqpolicy"
)

// coqHost is what the Coq checks of one toolchain share on this host, in
// one directory under the Checker's scratch root:
//
//	policy/        the policy plugin, built against this Coq (coqpolicy)
//	lib/coq/       the stdlib's compiled files: coqlib without its .v sources
//	lib/coq-core   a link to the real coq-core (plugins, found from coqlib/..)
//
// The untrusted compile runs with -coqlib lib/coq and the real coqlib
// hidden (sandbox.Spec.Hide), so it reads the stdlib's compiled libraries
// and no host source: a Load of a stdlib .v fails even if the plugin were
// blind. The directory is named by a digest of everything it is built
// from, written to a temporary name and renamed when complete, so
// concurrent workers share one and a changed toolchain gets a new one.
type coqHost struct {
	plugin  *coqpolicy.Plugin
	coqlib  string // the real stdlib directory (coqc -where)
	coqCore string // the real coq-core directory (coqlib/../coq-core)
	lib     string // the compiled-only view: -coqlib lib/coq
	dir     string // the whole directory, read-only in the compile's sandbox
}

// coqHostKey names a toolchain: the binaries a Coq check depends on.
type coqHostKey struct{ coqc, ocamlfind string }

// coqHosts prepares each toolchain's coqHost once per Checker. A failure is
// not kept: the next check tries again.
type coqHosts struct {
	mu    sync.Mutex
	ready map[coqHostKey]*coqHost
}

func (c *Checker) coqHost(ctx context.Context, p *Profile) (*coqHost, error) {
	key := coqHostKey{p.Coq.Coqc, p.Coq.Ocamlfind}
	c.coq.mu.Lock()
	defer c.coq.mu.Unlock()
	if h, ok := c.coq.ready[key]; ok {
		return h, nil
	}
	h, err := prepareCoqHost(ctx, c.cfg.ScratchRoot, key)
	if err != nil {
		return nil, err
	}
	if c.coq.ready == nil {
		c.coq.ready = map[coqHostKey]*coqHost{}
	}
	c.coq.ready[key] = h
	return h, nil
}

// coqHostComplete marks a finished coqHost directory.
const coqHostComplete = ".complete"

func prepareCoqHost(ctx context.Context, root string, key coqHostKey) (*coqHost, error) {
	coqlib, err := coqWhere(ctx, key.coqc)
	if err != nil {
		return nil, err
	}
	coqCore, err := filepath.EvalSymlinks(filepath.Join(coqlib, "..", "coq-core"))
	if err != nil {
		return nil, &InfraError{Step: "coq toolchain", Err: fmt.Errorf("coq-core beside the stdlib %s: %w", coqlib, err)}
	}
	digest, err := coqHostDigest(key, coqlib)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "coq-host-"+digest)
	h := &coqHost{plugin: &coqpolicy.Plugin{Dir: filepath.Join(dir, "policy")}, coqlib: coqlib, coqCore: coqCore,
		lib: filepath.Join(dir, "lib", "coq"), dir: dir}
	if _, err := os.Lstat(filepath.Join(dir, coqHostComplete)); err == nil {
		return h, nil
	}
	tmp, err := os.MkdirTemp(root, "coq-host-tmp-")
	if err != nil {
		return nil, &InfraError{Step: "coq toolchain", Err: err}
	}
	defer func() { _ = os.RemoveAll(tmp) }() // gone after the rename
	if err := buildCoqHost(ctx, tmp, key, coqlib, coqCore); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process finished the same directory first: use it.
		if _, serr := os.Lstat(filepath.Join(dir, coqHostComplete)); serr == nil {
			return h, nil
		}
		return nil, &InfraError{Step: "coq toolchain", Err: err}
	}
	return h, nil
}

func buildCoqHost(ctx context.Context, dir string, key coqHostKey, coqlib, coqCore string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return &InfraError{Step: "coq toolchain", Err: err}
	}
	policy := filepath.Join(dir, "policy")
	if err := os.Mkdir(policy, 0o755); err != nil {
		return &InfraError{Step: "coq toolchain", Err: err}
	}
	if _, err := coqpolicy.Build(ctx, policy, key.ocamlfind); err != nil {
		return &InfraError{Step: "coq policy plugin", Err: err}
	}
	lib := filepath.Join(dir, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		return &InfraError{Step: "coq toolchain", Err: err}
	}
	if err := compiledView(coqlib, filepath.Join(lib, "coq")); err != nil {
		return &InfraError{Step: "coq stdlib view", Err: err}
	}
	if err := os.Symlink(coqCore, filepath.Join(lib, "coq-core")); err != nil {
		return &InfraError{Step: "coq stdlib view", Err: err}
	}
	if err := os.WriteFile(filepath.Join(dir, coqHostComplete), nil, 0o644); err != nil {
		return &InfraError{Step: "coq toolchain", Err: err}
	}
	return nil
}

// coqWhere asks coqc for its stdlib directory.
func coqWhere(ctx context.Context, coqc string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, coqc, "-where")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", &InfraError{Step: "coq toolchain", Err: fmt.Errorf("%s -where: %v: %s", coqc, err, errOut.String())}
	}
	dir, err := filepath.EvalSymlinks(strings.TrimSpace(out.String()))
	if err != nil {
		return "", &InfraError{Step: "coq toolchain", Err: fmt.Errorf("%s -where: %w", coqc, err)}
	}
	return dir, nil
}

// coqHostDigest covers what the directory is built from: the plugin's
// source, the binaries (by content), and the stdlib's files (names, sizes,
// modification times).
func coqHostDigest(key coqHostKey, coqlib string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "plugin %s\n", coqpolicy.SourceDigest())
	for _, bin := range []string{key.coqc, key.ocamlfind} {
		path, err := exec.LookPath(bin)
		if err != nil {
			return "", &InfraError{Step: "coq toolchain", Err: err}
		}
		sum, err := fileSum(path)
		if err != nil {
			return "", &InfraError{Step: "coq toolchain", Err: err}
		}
		fmt.Fprintf(h, "bin %q %s\n", path, sum)
	}
	err := filepath.WalkDir(coqlib, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %v %d %d\n", path, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", &InfraError{Step: "coq toolchain", Err: err}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// compiledView mirrors src into dst without the .v sources: directories
// are made, every other file is hard-linked (copied where the kernel
// refuses the link: another file system, or protected_hardlinks for a file
// of another user), a symlink to a file is replaced by that file.
func compiledView(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(out, 0o755)
		case strings.HasSuffix(d.Name(), ".v"):
			return nil // a source: the compile reads compiled libraries only
		}
		real := path
		if d.Type()&fs.ModeSymlink != 0 {
			if real, err = filepath.EvalSymlinks(path); err != nil {
				return nil // a dangling link: nothing to read
			}
			if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() || strings.HasSuffix(real, ".v") {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		return linkOrCopy(real, out)
	})
}

func linkOrCopy(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil || !(errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)) {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
