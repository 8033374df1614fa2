package sandbox

import (
	"fmt"
	"path/filepath"
)

// validateSpec checks what both isolated modes require of a spec, from
// the spec alone (validateHidden looks at the host).
func validateSpec(spec Spec) error {
	if spec.Cwd != "" && !filepath.IsLocal(spec.Cwd) {
		return fmt.Errorf("%w: Cwd %q must be a relative path inside the scratch directory", ErrInvalidSpec, spec.Cwd)
	}
	for _, p := range spec.ReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%w: read-only path %q must be absolute", ErrInvalidSpec, p)
		}
	}
	for i := range spec.Hide {
		if err := checkHidePath(spec, i); err != nil {
			return err
		}
	}
	switch spec.Network {
	case "", NetworkNone, NetworkLoopback:
	default:
		return fmt.Errorf("%w: network %q is not none or loopback", ErrInvalidSpec, spec.Network)
	}
	return nil
}

// validateHidden resolves spec.Hide on the host (resolveHidden) and
// refuses what it refuses, before anything is acquired: the home is not
// made yet, so its place (the scratch root, or the caller's directory)
// stands for it.
func validateHidden(spec Spec, scratchRoot string) error {
	_, err := resolveHidden(spec, scratchRoot, spec.Scratch)
	return err
}
