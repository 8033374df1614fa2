package sandbox

import "strings"

// warmKey is what a warm sandbox's view depends on. A spec runs in a warm
// sandbox only when its key matches exactly.
type warmKey struct {
	mode     mode   // namespaceMode{} or landlockMode{}
	readOnly string // Spec.ReadOnly, NUL-joined in order
	network  Network
	tmpSize  int64
	unix     bool // Spec.UnixSockets
}

// newWarmKey is spec's key in mode m (each mode's warmKey may drop what
// its view does not depend on).
func newWarmKey(m mode, spec Spec) warmKey {
	n := spec.Network
	if n == "" {
		n = NetworkNone
	}
	return warmKey{mode: m, readOnly: strings.Join(spec.ReadOnly, "\x00"), network: n, tmpSize: spec.Limits.TmpSize, unix: spec.UnixSockets}
}

// spec is the part of a Spec the view is planned from.
func (k warmKey) spec() Spec {
	var ro []string
	if k.readOnly != "" {
		ro = strings.Split(k.readOnly, "\x00")
	}
	return Spec{ReadOnly: ro, Network: k.network, UnixSockets: k.unix, Limits: Limits{TmpSize: k.tmpSize}}
}
