package embedded_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/broker/brokertest"
	"github.com/warrenhq/warren/broker/embedded"
)

// logLines collects log lines for assertions.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}

// The data dir fills up and a write fails: nats-server then refuses
// every write to that stream, even once space is back, until it
// restarts. The broker warns while the disk is low (again and again),
// says it waits for space, and restarts by itself once space is back:
// what was stored before is kept, the same connections (in-process and
// TCP) write again, and AfterRestart hears of it.
func TestAFullDiskRecoversByItself(t *testing.T) {
	dir := brokertest.SmallDisk(t, 64<<20)
	logs := &logLines{}
	var restarted atomic.Int32
	srv, err := embedded.New(embedded.Config{
		DataDir: dir, Port: -1, DiskCheckInterval: 20 * time.Millisecond, LowDiskWarnEvery: 50 * time.Millisecond,
		Logger: zerolog.New(logs), AfterRestart: func() { restarted.Add(1) },
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(srv.Stop)
	firstID := srv.ID()
	js := jetStream(t, srv)
	tcp, err := broker.Connect(ctx, srv.ClientURL(), "tcp")
	require.NoError(t, err)
	t.Cleanup(tcp.Close)
	tcpJS, err := jetstream.New(tcp)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, MaxBytes: 8 << 20})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "s.before", []byte("kept"))
	require.NoError(t, err)
	require.False(t, srv.Disk().Low)
	require.Positive(t, srv.Disk().Free)

	free := brokertest.Fill(t, dir)
	tryPublish := func(js jetstream.JetStream, subj string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := js.Publish(ctx, subj, make([]byte, 64<<10))
		return err
	}
	require.Error(t, tryPublish(js, "s.full"), "nothing is stored on a full disk")
	require.Eventually(t, func() bool { d := srv.Disk(); return d.StoreFailed && d.Low }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return logs.count("almost full") >= 2 }, 10*time.Second, 5*time.Millisecond,
		"the low-disk warning repeats while it holds")
	require.Positive(t, logs.count("JetStream cannot write its store"))
	require.Zero(t, srv.Disk().Restarts, "no restart while the disk is full")

	free()
	require.Eventually(t, func() bool { return tryPublish(js, fmt.Sprint("s.after.", time.Now().UnixNano())) == nil }, 20*time.Second, 10*time.Millisecond,
		"the in-process connection writes again")
	require.Eventually(t, func() bool { return tryPublish(tcpJS, "s.tcp") == nil }, 20*time.Second, 10*time.Millisecond,
		"the TCP connection writes again")
	d := srv.Disk()
	require.Equal(t, 1, d.Restarts)
	require.False(t, d.StoreFailed)
	require.False(t, d.Low)
	require.EqualValues(t, 1, restarted.Load())
	require.NotEqual(t, firstID, srv.ID(), "a new server")
	require.Positive(t, logs.count("data dir has free space again"))

	s, err := js.Stream(ctx, "S")
	require.NoError(t, err)
	m, err := s.GetLastMsgForSubject(ctx, "s.before")
	require.NoError(t, err)
	require.Equal(t, "kept", string(m.Data))
}
