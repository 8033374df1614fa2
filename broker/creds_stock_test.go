package broker_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
)

// connectSeen is what a client sent in its CONNECT to a fake server that
// asked for auth: the server's side of what a creds file gives away.
type connectSeen struct {
	JWT  string `json:"jwt"`
	Nkey string `json:"nkey"`
	Sig  string `json:"sig"`
	raw  []byte
}

// fakeAuthServer accepts one connection, sends an INFO asking for auth
// and returns the CONNECT line it got.
func fakeAuthServer(t *testing.T) (string, <-chan connectSeen) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	seen := make(chan connectSeen, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = c.Write([]byte(`INFO {"server_id":"fake","version":"2.11.0","max_payload":1048576,"auth_required":true,"nonce":"bm9uY2Utbm9uY2U"}` + "\r\n"))
		line, err := bufio.NewReader(c).ReadBytes('\n')
		if err != nil {
			return
		}
		var s connectSeen
		s.raw = line
		_ = json.Unmarshal(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("CONNECT ")), &s)
		_, _ = c.Write([]byte("-ERR 'Authorization Violation'\r\n"))
		seen <- s
	}()
	return "nats://" + l.Addr().String(), seen
}

// A tenant's creds file given to a stock client as JWT credentials (what
// `nats --creds FILE` does: nats.UserCredentials) sends the public key as
// its "JWT", never the seed; given as an nkey seed file (`nats --nkey
// FILE`: nats.NkeyOptionFromSeed) it signs with the seed, as it must.
func TestCredsFileGivesStockClientsNoSeed(t *testing.T) {
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	data, err := broker.FormatCreds(broker.Principal{Name: "alice", Role: broker.RoleSubmitter}, seed)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "alice.creds")
	require.NoError(t, os.WriteFile(path, data, 0o600))

	t.Run("as JWT credentials", func(t *testing.T) {
		url, seen := fakeAuthServer(t)
		_, err := nats.Connect(url, nats.UserCredentials(path), nats.NoReconnect(), nats.Timeout(10*time.Second))
		require.Error(t, err)
		s := <-seen
		require.Equal(t, pub, s.JWT, "the first block is the public key")
		require.NotContains(t, string(s.raw), string(seed))
		require.NotContains(t, string(s.raw), strings.TrimPrefix(string(seed), "SU")[:20], "no part of the seed")
	})
	t.Run("as an nkey seed file (control)", func(t *testing.T) {
		url, seen := fakeAuthServer(t)
		opt, err := nats.NkeyOptionFromSeed(path)
		require.NoError(t, err)
		_, err = nats.Connect(url, opt, nats.NoReconnect(), nats.Timeout(10*time.Second))
		require.Error(t, err)
		s := <-seen
		require.Equal(t, pub, s.Nkey)
		require.NotEmpty(t, s.Sig)
		require.NotContains(t, string(s.raw), string(seed))
	})
}

// A creds file whose public key block is not its seed's is refused: what
// a stock client would send as the JWT is the public key or nothing.
func TestParseCredsRefusesAForeignPublicKeyBlock(t *testing.T) {
	seed, other := userSeed(t), userSeed(t)
	p := broker.Principal{Name: "alice", Role: broker.RoleSubmitter}
	good, err := broker.FormatCreds(p, seed)
	require.NoError(t, err)
	_, err = broker.ParseCreds(good)
	require.NoError(t, err, "control: the file as written")
	foreign, err := broker.FormatCreds(p, other)
	require.NoError(t, err)
	// other's public key block, seed's seed block.
	mixed := append(foreign[:bytes.Index(foreign, []byte("-----BEGIN USER NKEY SEED"))], good[bytes.Index(good, []byte("-----BEGIN USER NKEY SEED")):]...)
	_, err = broker.ParseCreds(mixed)
	require.ErrorContains(t, err, "is not its seed's public key")
}
