package deploy_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/messages"
)

// stubAuth stands in for the auth/server.conf `warren auth init` writes:
// an account with JetStream and one user.
const stubAuth = `accounts {
  WARREN { jetstream: enabled, users: [ { user: warren, password: "test-only" } ] }
}
`

// TestNATSClusterConfigBringsUpACluster loads deploy/nats/node-{1,2,3}.conf
// with nats-server's own config parser, in a copy whose ports, hosts and
// store are rewritten for loopback (with a stub auth include and a test
// CA), starts the three nodes, and runs Warren's setup over TLS with the
// stub user: every stream at R3.
func TestNATSClusterConfigBringsUpACluster(t *testing.T) {
	shared, err := os.ReadFile("nats/warren-cluster.conf")
	require.NoError(t, err)
	clientPorts, routePorts := brokertest.FreePorts(t, 3), brokertest.FreePorts(t, 3)
	tlsDir := t.TempDir()
	ca := writeTestPKI(t, tlsDir)

	conf := string(shared)
	conf = regexp.MustCompile(`(?m)^port: 4222$`).ReplaceAllString(conf, "port: CLIENT_PORT\nhost: 127.0.0.1")
	conf = strings.Replace(conf, "  port: 6222", "  host: 127.0.0.1\n  port: ROUTE_PORT", 1)
	for i := range 3 {
		conf = strings.ReplaceAll(conf, fmt.Sprintf("nats-route://broker-%d:6222", i+1), fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i]))
	}
	require.NotContains(t, conf, "nats-route://broker-", "every route rewritten")
	conf = strings.ReplaceAll(conf, `"./tls/`, `"`+tlsDir+`/`)

	var servers []*server.Server
	for i := range 3 {
		dir := t.TempDir()
		node := strings.NewReplacer("CLIENT_PORT", fmt.Sprint(clientPorts[i]), "ROUTE_PORT", fmt.Sprint(routePorts[i]),
			"/var/lib/nats/jetstream", filepath.Join(dir, "js")).Replace(conf)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "warren-cluster.conf"), []byte(node), 0o600))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "auth"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "auth", "server.conf"), []byte(stubAuth), 0o600))
		nodeConf, err := os.ReadFile(fmt.Sprintf("nats/node-%d.conf", i+1))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "node.conf"), nodeConf, 0o600))

		opts, err := server.ProcessConfigFile(filepath.Join(dir, "node.conf"))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("broker-%d", i+1), opts.ServerName)
		require.True(t, opts.JetStream)
		require.EqualValues(t, 8<<20, opts.MaxPayload)
		require.NotNil(t, opts.Cluster.TLSConfig, "routes use TLS")
		require.Equal(t, tls.RequireAndVerifyClientCert, opts.Cluster.TLSConfig.ClientAuth, "routes authenticate by certificate")
		opts.NoSigs, opts.NoLog = true, true
		ns, err := server.NewServer(opts)
		require.NoError(t, err)
		servers = append(servers, ns)
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	}
	for _, ns := range servers {
		go ns.Start()
	}
	for _, ns := range servers {
		require.True(t, ns.ReadyForConnections(30*time.Second))
	}

	urls := make([]string, 3)
	for i, p := range clientPorts {
		urls[i] = fmt.Sprintf("tls://127.0.0.1:%d", p)
	}
	_, err = nats.Connect(strings.Join(urls, ","), nats.RootCAs(ca), nats.UserInfo("warren", "wrong"), nats.MaxReconnects(0))
	require.Error(t, err, "the auth include is in force")
	nc, err := broker.Connect(context.Background(), strings.Join(urls, ","), "deploy-test", nats.RootCAs(ca), nats.UserInfo("warren", "test-only"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokertest.WaitJetStream(t, js)
	require.NoError(t, broker.Setup(ctx, js, broker.StreamConfig{}))
	for _, name := range []string{messages.StreamTasks, messages.StreamResults, messages.StreamDLQ, "KV_" + messages.BucketHosts} {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		require.Equal(t, 3, s.CachedInfo().Config.Replicas, name)
	}
	_, err = js.Publish(ctx, messages.ResultSubject("b", 1, "t"), []byte("ok"))
	require.NoError(t, err)
}

// writeTestPKI writes ca.pem, server.pem and server-key.pem (a certificate
// for 127.0.0.1 usable by servers and, for routes, as a client) into dir
// and returns the CA file.
func writeTestPKI(t *testing.T, dir string) string {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "warren test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	write := func(name, typ string, b []byte) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600))
	}
	write("ca.pem", "CERTIFICATE", caDER)
	write("server.pem", "CERTIFICATE", der)
	write("server-key.pem", "EC PRIVATE KEY", keyDER)
	return filepath.Join(dir, "ca.pem")
}
