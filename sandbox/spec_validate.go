package sandbox

import (
	"fmt"
	"path/filepath"
)

// validateSpec checks what both isolated modes require of a spec.
func validateSpec(spec Spec) error {
	if spec.Cwd != "" && !filepath.IsLocal(spec.Cwd) {
		return fmt.Errorf("%w: Cwd %q must be a relative path inside the scratch directory", ErrInvalidSpec, spec.Cwd)
	}
	for _, p := range spec.ReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%w: read-only path %q must be absolute", ErrInvalidSpec, p)
		}
	}
	switch spec.Network {
	case "", NetworkNone, NetworkLoopback:
	default:
		return fmt.Errorf("%w: network %q is not none or loopback", ErrInvalidSpec, spec.Network)
	}
	return nil
}
