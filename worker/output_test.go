package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/broker/embedded"
	"github.com/warrenhq/warren/messages"
)

// stockPayloadBroker is an embedded broker with a stock nats-server's max
// payload of 1 MiB (Warren's own broker allows 8 MiB).
func stockPayloadBroker(t *testing.T) *brokertest.Broker {
	dir := t.TempDir()
	srv, err := embedded.New(embedded.Config{DataDir: dir, Port: -1, MaxPayload: 1 << 20})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	b := &brokertest.Broker{Server: srv, URL: srv.ClientURL(), Dir: dir}
	b.Conn, b.JS = b.Dial(t, "test")
	require.NoError(t, broker.Setup(ctx, b.JS, broker.StreamConfig{}))
	return b
}

// Output over what one result message can hold (the old cap was 258,048
// bytes per stream) and under output_bytes is stored whole: the stream too
// large for the message in the outputs object store, named by the result,
// and the stored bytes equal the streamed events.
func TestLargeOutputIsStoredWhole(t *testing.T) {
	b := stockPayloadBroker(t)
	startWorker(t, b, "w1", workerOpts{})
	const outN, errN = 900_000, 300_000
	tk := shTask("large", "t1", "head -c 900000 /dev/zero | tr '\\0' o; head -c 300000 /dev/zero | tr '\\0' e >&2")
	tk.Limits.OutputBytes = 2 << 20
	events := subscribeEvents(t, b.Conn, "large", "t1")
	publish(t, b.JS, tk)
	r := collect(t, b.JS, "large", 1, time.Minute)["t1"]
	require.Equal(t, messages.StatusOK, r.Status)
	require.NotEmpty(t, r.StdoutObject, "stdout did not fit the result message")
	require.Empty(t, r.Stdout)
	require.Empty(t, r.StderrObject, "stderr fit once stdout was moved out")
	require.False(t, r.StdoutTruncated)
	require.False(t, r.StderrTruncated)

	require.NoError(t, broker.LoadOutputs(context.Background(), b.JS, r))
	require.Equal(t, strings.Repeat("o", outN), string(r.Stdout))
	require.Equal(t, strings.Repeat("e", errN), string(r.Stderr))

	var stdout, stderr strings.Builder
	for _, e := range events.wait(t, 30*time.Second) {
		switch e.Type {
		case messages.EventStdout:
			stdout.Write(e.Data)
		case messages.EventStderr:
			stderr.Write(e.Data)
		}
	}
	require.Equal(t, string(r.Stdout), stdout.String(), "the events and the stored bytes are equal")
	require.Equal(t, string(r.Stderr), stderr.String())
}
