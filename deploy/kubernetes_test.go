package deploy_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/warrenhq/warren/verify"
)

var update = flag.Bool("update", false, "regenerate deploy/kubernetes/profiles-configmap.yaml from deploy/profiles.yaml")

// decodeStrict decodes a manifest into its API type, refusing unknown or
// duplicate fields: a typo in a manifest fails here, not in a cluster.
func decodeStrict(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, into), path)
}

func TestKubernetesManifestsDecodeStrictly(t *testing.T) {
	var ns corev1.Namespace
	decodeStrict(t, "kubernetes/namespace.yaml", &ns)
	require.Equal(t, "Namespace", ns.Kind)

	var ds appsv1.DaemonSet
	decodeStrict(t, "kubernetes/worker-daemonset.yaml", &ds)
	require.Equal(t, "DaemonSet", ds.Kind)
	require.Equal(t, ns.Name, ds.Namespace)
	require.Equal(t, ds.Spec.Selector.MatchLabels["app.kubernetes.io/name"], ds.Spec.Template.Labels["app.kubernetes.io/name"], "the selector matches the pods")
	c := ds.Spec.Template.Spec.Containers[0]
	require.Equal(t, "worker", c.Args[0])
	sc := c.SecurityContext
	require.NotNil(t, sc)
	require.False(t, *sc.Privileged, "capabilities, not privileged")
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.NotContains(t, sc.Capabilities.Add, corev1.Capability("SYS_PTRACE"))
	require.NotContains(t, sc.Capabilities.Add, corev1.Capability("SYS_MODULE"))
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.GreaterOrEqual(t, *ds.Spec.Template.Spec.TerminationGracePeriodSeconds, int64(300), "longer than the worker's 5m drain")

	var cm corev1.ConfigMap
	decodeStrict(t, "kubernetes/profiles-configmap.yaml", &cm)
	var mounted bool
	for _, v := range ds.Spec.Template.Spec.Volumes {
		mounted = mounted || (v.ConfigMap != nil && v.ConfigMap.Name == cm.Name)
	}
	require.True(t, mounted, "the DaemonSet mounts the profiles ConfigMap")
	require.Contains(t, c.Args, "--verify-profiles=/etc/warren/profiles/profiles.yaml")

	var svc corev1.Service
	decodeStrict(t, "kubernetes/metrics-service.yaml", &svc)
	require.Equal(t, ds.Spec.Template.Labels["app.kubernetes.io/name"], svc.Spec.Selector["app.kubernetes.io/name"])
	require.Equal(t, "metrics", svc.Spec.Ports[0].Name)
	var named bool
	for _, p := range c.Ports {
		named = named || (p.Name == svc.Spec.Ports[0].TargetPort.StrVal && p.ContainerPort == svc.Spec.Ports[0].Port)
	}
	require.True(t, named, "the Service targets the container port named metrics")
}

// TestKubernetesProfilesConfigMapMatchesProfilesFile keeps the ConfigMap
// equal to deploy/profiles.yaml, and that file loadable by the worker.
func TestKubernetesProfilesConfigMapMatchesProfilesFile(t *testing.T) {
	src, err := os.ReadFile("profiles.yaml")
	require.NoError(t, err)
	const path = "kubernetes/profiles-configmap.yaml"
	if *update {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		head, _, ok := bytes.Cut(data, []byte("  profiles.yaml: |\n"))
		require.True(t, ok)
		var b strings.Builder
		b.Write(head)
		b.WriteString("  profiles.yaml: |\n")
		for _, l := range strings.SplitAfter(string(src), "\n") {
			if strings.TrimSpace(l) != "" {
				b.WriteString("    ")
			}
			b.WriteString(l)
		}
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	var cm corev1.ConfigMap
	decodeStrict(t, path, &cm)
	require.Equal(t, string(src), cm.Data["profiles.yaml"], "run: go test ./deploy -run TestKubernetesProfiles -update")
	file := filepath.Join(t.TempDir(), "profiles.yaml")
	require.NoError(t, os.WriteFile(file, []byte(cm.Data["profiles.yaml"]), 0o600))
	_, err = verify.LoadProfiles(file)
	require.NoError(t, err)
}

// natsValues is the part of the NATS chart's values Warren sets. The
// chart's own schema is not vendored here; strict decoding into this
// struct catches a misspelt key of ours, and the test pins the settings
// Warren relies on.
type natsValues struct {
	Config struct {
		Cluster struct {
			Enabled  bool `json:"enabled"`
			Replicas int  `json:"replicas"`
			TLS      struct {
				Enabled    bool   `json:"enabled"`
				SecretName string `json:"secretName"`
			} `json:"tls"`
		} `json:"cluster"`
		JetStream struct {
			Enabled   bool `json:"enabled"`
			FileStore struct {
				PVC struct {
					Size string `json:"size"`
				} `json:"pvc"`
				MaxSize string `json:"maxSize"`
			} `json:"fileStore"`
		} `json:"jetstream"`
		NATS struct {
			TLS struct {
				Enabled    bool   `json:"enabled"`
				SecretName string `json:"secretName"`
			} `json:"tls"`
		} `json:"nats"`
		Merge map[string]string `json:"merge"`
	} `json:"config"`
	ConfigMap struct {
		Merge struct {
			Data map[string]string `json:"data"`
		} `json:"merge"`
	} `json:"configMap"`
	PodTemplate struct {
		TopologySpreadConstraints map[string]struct {
			MaxSkew           int    `json:"maxSkew"`
			WhenUnsatisfiable string `json:"whenUnsatisfiable"`
		} `json:"topologySpreadConstraints"`
	} `json:"podTemplate"`
}

func TestKubernetesNATSValues(t *testing.T) {
	var v natsValues
	decodeStrict(t, "kubernetes/nats-values.yaml", &v)
	require.True(t, v.Config.Cluster.Enabled)
	require.Equal(t, 3, v.Config.Cluster.Replicas)
	require.True(t, v.Config.JetStream.Enabled)
	require.True(t, v.Config.NATS.TLS.Enabled)
	require.True(t, v.Config.Cluster.TLS.Enabled)
	require.Equal(t, "<< 8MB >>", v.Config.Merge["max_payload"])
	include := v.Config.Merge["$include"]
	require.Contains(t, v.ConfigMap.Merge.Data, include, "the auth include is in the chart's ConfigMap")
}
