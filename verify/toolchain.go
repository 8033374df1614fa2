package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/warrenhq/warren/verify/coqpolicy"
)

// CheckerVersion names the decision logic of this package. Bump it with
// any change that can turn a verdict: cached verdicts of another version
// are never served.
const CheckerVersion = "warren-verify/3"

// Fingerprint identifies a profile's checker on this host: its kind, the
// contents of its checker binaries (coqc and coqchk, and the source of the
// Coq policy plugin; lake, the REPL and
// warren-lean-check when given as paths), the Lean project's
// lean-toolchain and lake-manifest.json, and every profile setting that
// can change a verdict (the policy: limits, axioms, policies, flags,
// environment, toolchain paths). Two hosts with the same packages get the
// same fingerprint. What it does not see: a library inside the toolchain
// that changed without its binaries (Debian ships them together).
func (p *Profile) Fingerprint() (string, error) {
	h := sha256.New()
	var files []string
	switch p.Kind {
	case KindCoq:
		files = []string{p.Coq.Coqc, p.Coq.Coqchk}
	case KindLeanFile, KindLeanREPL:
		files = []string{p.Lean.Lake, p.Lean.Checker, p.Lean.REPL}
		if p.Lean.Project != "" {
			files = append(files, filepath.Join(p.Lean.Project, "lean-toolchain"), filepath.Join(p.Lean.Project, "lake-manifest.json"))
		}
	}
	for _, f := range files {
		if !filepath.IsAbs(f) {
			fmt.Fprintf(h, "name %q\n", f)
			continue
		}
		sum, err := fileSum(f)
		if os.IsNotExist(err) { // optional files; installed() requires the binaries
			fmt.Fprintf(h, "absent %q\n", f)
			continue
		}
		if err != nil {
			return "", &InfraError{Step: "toolchain fingerprint", Err: err}
		}
		fmt.Fprintf(h, "file %q %s\n", f, sum)
	}
	if p.Kind == KindCoq {
		// The policy plugin decides verdicts too.
		fmt.Fprintf(h, "coq policy plugin %s\n", coqpolicy.SourceDigest())
	}
	pol, err := p.policy()
	if err != nil {
		return "", err
	}
	h.Write(pol)
	return string(p.Kind) + ":" + hex.EncodeToString(h.Sum(nil))[:32], nil
}

// policy is the profile as it decides verdicts: everything but its name.
func (p *Profile) policy() ([]byte, error) {
	q := *p
	q.Name = ""
	b, err := json.Marshal(&q)
	if err != nil {
		return nil, fmt.Errorf("verify: encode profile %s: %w", p.Name, err)
	}
	return b, nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
