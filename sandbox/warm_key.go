package sandbox

import "strings"

// warmKey is what a warm sandbox's view depends on. A spec runs in a warm
// sandbox only when its key matches exactly.
type warmKey struct {
	mode      mode   // namespaceMode{} or landlockMode{}
	readOnly  string // Spec.ReadOnly, NUL-joined in order
	hide      string // Spec.Hide, NUL-joined in order: the view's empty mounts, the policy's rules
	network   Network
	tmpSize   int64
	unix      bool // Spec.UnixSockets
	tmpInHome bool // Spec.TmpInHome
}

// newWarmKey is spec's key in mode m (each mode's warmKey may drop what
// its view does not depend on).
func newWarmKey(m mode, spec Spec) warmKey {
	n := spec.Network
	if n == "" {
		n = NetworkNone
	}
	return warmKey{
		mode:      m,
		readOnly:  strings.Join(spec.ReadOnly, "\x00"),
		hide:      strings.Join(spec.Hide, "\x00"),
		network:   n,
		tmpSize:   spec.Limits.TmpSize,
		unix:      spec.UnixSockets,
		tmpInHome: spec.TmpInHome,
	}
}

// spec is the part of a Spec the view is planned from.
func (k warmKey) spec() Spec {
	return Spec{
		ReadOnly:    split0(k.readOnly),
		Hide:        split0(k.hide),
		Network:     k.network,
		UnixSockets: k.unix,
		TmpInHome:   k.tmpInHome,
		Limits:      Limits{TmpSize: k.tmpSize},
	}
}

// split0 undoes a NUL join (nil for the empty string).
func split0(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}
