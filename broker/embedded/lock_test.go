package embedded_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/broker/embedded"
)

func start(t *testing.T, dir string) (*embedded.Server, error) {
	t.Helper()
	srv, err := embedded.New(embedded.Config{DataDir: dir, DontListen: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = srv.Start(ctx)
	if err == nil {
		t.Cleanup(srv.Stop)
	}
	return srv, err
}

// jetStream is a JetStream context on an in-process connection to srv,
// closed in t.Cleanup.
func jetStream(t *testing.T, srv *embedded.Server) jetstream.JetStream {
	t.Helper()
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// usable checks that srv serves JetStream: a stream can be made and
// written.
func usable(t *testing.T, srv *embedded.Server, stream string) {
	t.Helper()
	js := jetStream(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{stream + ".>"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, stream+".x", []byte("x"))
	require.NoError(t, err)
}

// Two brokers on one JetStream store would each rewrite the other's blocks
// (two client commands with no broker running, on one --data-dir): the
// second is refused, with an error naming the dir and the holder, and the
// first goes on. Once the first stops, the dir is free again, with what
// the first stored.
func TestASecondBrokerOnADataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := start(t, dir)
	require.NoError(t, err)

	_, err = start(t, dir)
	require.ErrorIs(t, err, embedded.ErrDataDirInUse)
	var inUse *embedded.DataDirInUseError
	require.True(t, errors.As(err, &inUse))
	require.Equal(t, dir, inUse.Dir)
	require.Contains(t, err.Error(), dir)
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d,", os.Getpid()))

	usable(t, first, "FIRST")
	first.Stop()

	again, err := start(t, dir)
	require.NoError(t, err, "the dir is free once its broker stopped")
	js := jetStream(t, again)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "FIRST")
	require.NoError(t, err, "the first broker's stream survives")
	require.EqualValues(t, 1, s.CachedInfo().State.Msgs)
}

// A broker killed with its data dir held (a client command killed with
// SIGKILL) leaves no lock behind: the lock is the process's, not a file's
// existence. While it runs, another process is refused.
func TestALockDiesWithItsProcess(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	_, err = start(t, dir)
	require.ErrorIs(t, err, embedded.ErrDataDirInUse)
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d,", cmd.Process.Pid))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	srv, err := start(t, dir)
	require.NoError(t, err, "a killed holder's lock is gone")
	usable(t, srv, "AFTER")
}

// A server that fails to start (its port taken) says why at once, in
// nats-server's words (not after ReadyTimeout, as "not ready"), and leaves
// the data dir free: the next broker on it starts.
func TestAFailedStartSaysWhyAndLeavesTheDirFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	dir := t.TempDir()
	srv, err := embedded.New(embedded.Config{DataDir: dir, Port: l.Addr().(*net.TCPAddr).Port, ReadyTimeout: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = srv.Start(ctx)
	require.ErrorContains(t, err, "address already in use")
	require.ErrorContains(t, err, "nats-server did not start")
	require.NotErrorIs(t, err, embedded.ErrDataDirInUse)

	next, err := start(t, dir)
	require.NoError(t, err, "a failed start released the dir")
	usable(t, next, "NEXT")
}
