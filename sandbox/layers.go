package sandbox

import "strings"

// Layers is a set of isolation layers a run had in force. Its String is
// Result.InForce: "namespace", "namespace+landlock+seccomp",
// "landlock+seccomp", or "none (insecure)" for the empty set.
type Layers uint8

// The isolation layers, in the order String names them.
const (
	// LayerNamespace: user, mount, pid, net, ipc, uts and cgroup
	// namespaces with an allow-list root.
	LayerNamespace Layers = 1 << iota
	// LayerLandlock: a Landlock domain (filesystem, TCP, scopes).
	LayerLandlock
	// LayerSeccomp: the seccomp filter.
	LayerSeccomp
)

// inForceNone is what a run with no layer reports.
const inForceNone = "none (insecure)"

var layerNames = []struct {
	l    Layers
	name string
}{{LayerNamespace, "namespace"}, {LayerLandlock, "landlock"}, {LayerSeccomp, "seccomp"}}

func (l Layers) String() string {
	var parts []string
	for _, n := range layerNames {
		if l&n.l != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return inForceNone
	}
	return strings.Join(parts, "+")
}

// The layer sets the isolated modes put in force.
const (
	// layersLayered: namespace mode with its Landlock layer (auto's first
	// choice).
	layersLayered = LayerNamespace | LayerLandlock | LayerSeccomp
	// layersLandlockOnly: the Landlock mode.
	layersLandlockOnly = LayerLandlock | LayerSeccomp
)
