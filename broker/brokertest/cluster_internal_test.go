package brokertest

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

func TestAtRest(t *testing.T) {
	current := &jetstream.PeerInfo{Name: "n2", Current: true}
	for _, tt := range []struct {
		name string
		ci   *jetstream.ClusterInfo
		want bool
	}{
		{"not clustered", nil, true},
		{"replicas current", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{current, {Name: "n3", Current: true}}}, true},
		{"no leader", &jetstream.ClusterInfo{Replicas: []*jetstream.PeerInfo{current}}, false},
		{"scaling", &jetstream.ClusterInfo{Leader: "n1", Desired: &jetstream.DesiredClusterInfo{}, Replicas: []*jetstream.PeerInfo{current}}, false},
		{"catching up", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{current, {Name: "n3", Lag: 5}}}, false},
		{"pending", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{{Name: "n3", Current: true, Pending: true}}}, false},
		{"a node the test left down", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{current, {Name: "n3", Offline: true}}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, atRest(tt.ci))
		})
	}
}
