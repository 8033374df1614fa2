package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/embedded"
)

// nats-server's own errors reach Config.Logger (not discarded):
// a client that breaks the payload limit is logged as an error.
func TestServerErrorsReachTheLogger(t *testing.T) {
	var logs syncbuf.Buffer
	srv, err := embedded.New(embedded.Config{DataDir: t.TempDir(), Port: -1, MaxPayload: 1024, Logger: zerolog.New(&logs)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)

	// A raw client: nats.go itself refuses to send an oversized message.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.ClientURL(), "nats://"))
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	_, err = r.ReadString('\n') // INFO
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "CONNECT {\"verbose\":false}\r\nPUB big 2048\r\n%s\r\n", strings.Repeat("x", 2048))
	require.NoError(t, err)

	logged := func() bool {
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, `"level":"error"`) && strings.Contains(line, `"component":"broker"`) && strings.Contains(line, "maximum payload exceeded") {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !logged() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, logged(), "no error line for the oversized message; logged:\n%s", logs.String())
}

// A store JetStream cannot use fails Start at once with nats-server's
// reason, rather than waiting out ReadyTimeout to say "not ready".
func TestAStoreJetStreamCannotUseFailsStartAtOnce(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jetstream"), []byte("not a directory"), 0o600))
	srv, err := embedded.New(embedded.Config{DataDir: dir, DontListen: true, ReadyTimeout: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = srv.Start(ctx)
	require.ErrorContains(t, err, "Can't start JetStream")
	require.ErrorContains(t, err, "not a directory")
}
