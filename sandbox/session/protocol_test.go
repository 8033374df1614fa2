package session

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/sandbox/session/internal/wire"
)

// scriptedRunner plays an agent that writes frames, then waits for the
// session to end it, or (ends set) for one request and then ends so.
type scriptedRunner struct {
	frames []byte
	ends   *sandbox.Result
	err    error
}

func (r scriptedRunner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	// The home a runner hands over before the agent runs: here the
	// test's temporary directory, never written.
	if err := spec.HomeReady(sandbox.HomeView{Dir: os.TempDir(), UID: -1, GID: -1}); err != nil {
		return nil, err
	}
	in := make(chan struct{})
	go func() {
		buf := make([]byte, 1)
		if _, err := spec.Stdin.Read(buf); err == nil {
			close(in)
		}
		_, _ = io.Copy(io.Discard, spec.Stdin)
	}()
	_, _ = spec.Stdout.Write(r.frames)
	if r.ends != nil || r.err != nil {
		select {
		case <-in:
		case <-ctx.Done():
		}
		return r.ends, r.err
	}
	<-ctx.Done()
	return &sandbox.Result{ExitCode: -1, Signal: "SIGKILL"}, nil
}

// How the run ended decides the GoneError's reason.
func TestGoneReasons(t *testing.T) {
	hello := wire.AppendFrame(nil, wire.TypeHello, 0, wire.Hello{Version: wire.Version, UID: int64(os.Geteuid()), Home: t.TempDir()}.Marshal())
	runnerErr := errors.New("wait failed")
	for name, c := range map[string]struct {
		res  *sandbox.Result
		err  error
		want GoneReason
	}{
		"ttl":    {res: &sandbox.Result{ExitCode: -1, Signal: "SIGKILL", TimedOut: true, Timeout: sandbox.TimeoutWall}, want: GoneTTL},
		"cpu":    {res: &sandbox.Result{ExitCode: -1, Signal: "SIGKILL", TimedOut: true, Timeout: sandbox.TimeoutCPU}, want: GoneCPU},
		"oom":    {res: &sandbox.Result{ExitCode: -1, Signal: "SIGKILL", OOMKills: 1}, want: GoneOOM},
		"exited": {res: &sandbox.Result{ExitCode: 2}, want: GoneAgentExited},
		"runner": {err: runnerErr, want: GoneRunner},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Start(context.Background(), scriptedRunner{frames: hello, ends: c.res, err: c.err}, Spec{})
			require.NoError(t, err)
			_, err = s.Exec(context.Background(), ExecRequest{Argv: []string{"true"}}, nil, nil)
			require.ErrorIs(t, err, ErrSessionGone)
			var g *GoneError
			require.ErrorAs(t, err, &g)
			require.Equal(t, c.want, g.Reason, g.Error())
			if c.err != nil {
				require.ErrorIs(t, err, runnerErr)
			}
			require.NoError(t, s.Close(context.Background()))
		})
	}
}

// The agent's stream comes from inside the sandbox: a frame that breaks
// the protocol ends the session (GoneProtocol) instead of confusing it.
func TestABrokenAgentStreamEndsTheSession(t *testing.T) {
	hello := wire.AppendFrame(nil, wire.TypeHello, 0, wire.Hello{Version: wire.Version, UID: int64(os.Geteuid()), Home: t.TempDir()}.Marshal())
	for name, tail := range map[string][]byte{
		"bad length":    {0xff, 0xff, 0xff, 0xff},
		"bad exit":      wire.AppendFrame(nil, wire.TypeExit, 1, []byte{0xff}),
		"request frame": wire.AppendFrame(nil, wire.TypeExec, 1, nil),
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Start(context.Background(), scriptedRunner{frames: append(append([]byte(nil), hello...), tail...)}, Spec{})
			require.NoError(t, err)
			select {
			case <-s.Done():
			case <-time.After(time.Minute):
				t.Fatal("the session did not end")
			}
			var g *GoneError
			require.ErrorAs(t, s.Err(), &g)
			require.Equal(t, GoneProtocol, g.Reason)
			require.ErrorIs(t, g, wire.ErrFrame)
			require.NoError(t, s.Close(context.Background()))
		})
	}
}

func TestStartRefusesAnotherProtocolVersion(t *testing.T) {
	hello := wire.AppendFrame(nil, wire.TypeHello, 0, wire.Hello{Version: wire.Version + 1}.Marshal())
	_, err := Start(context.Background(), scriptedRunner{frames: hello}, Spec{})
	require.ErrorIs(t, err, ErrAgent)
	require.ErrorContains(t, err, "protocol")
}

// FuzzAgentStream: whatever the agent's stream holds after its hello, the
// session neither panics nor hangs: it serves or ends (GoneProtocol when a
// frame breaks the protocol), and Close returns.
func FuzzAgentStream(f *testing.F) {
	f.Add(wire.AppendFrame(nil, wire.TypeStdout, 1, []byte("x")))
	f.Add(wire.AppendFrame(nil, wire.TypeExit, 1, wire.Exit{ExitCode: 1}.Marshal()))
	f.Add(wire.AppendFrame(nil, wire.TypePsReply, 1, wire.PsReply{Processes: []wire.Process{{PID: 3, Argv: []string{"a"}}}}.Marshal()))
	f.Add(wire.AppendFrame(nil, wire.TypeKillReply, 2, wire.Reply{Code: wire.CodeNoProcess}.Marshal()))
	f.Add([]byte{0, 0, 0, 5, 3, 0, 0, 0, 1})
	home := f.TempDir()
	f.Fuzz(func(t *testing.T, tail []byte) {
		hello := wire.AppendFrame(nil, wire.TypeHello, 0, wire.Hello{Version: wire.Version, UID: int64(os.Geteuid()), Home: home}.Marshal())
		s, err := Start(context.Background(), scriptedRunner{frames: append(hello, tail...)}, Spec{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, _ = s.Ps(ctx) // a forged reply may answer it; else it times out
		if err := s.Err(); err != nil {
			var g *GoneError
			if !errors.As(err, &g) || g.Reason != GoneProtocol {
				t.Fatalf("ended with %v", err)
			}
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
