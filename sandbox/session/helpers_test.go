package session

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/sandbox"
)

// modes are the isolation modes every session test runs in.
var modes = []sandbox.Isolation{sandbox.IsolationNamespace, sandbox.IsolationLandlock}

func newRunner(t testing.TB, mode sandbox.Isolation) *sandbox.Runner {
	t.Helper()
	return newRunnerWith(t, sandbox.Config{Isolation: mode})
}

func newRunnerWith(t testing.TB, cfg sandbox.Config) *sandbox.Runner {
	t.Helper()
	cfg.InitPath = testInitPath
	r, err := sandbox.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// warmRunner keeps a warm sandbox for sessions: its pool for the session
// view exists once a session has run (a session without Spec.Home can
// take one; the runner refills it in the background).
func warmRunner(t testing.TB, mode sandbox.Isolation) *sandbox.Runner {
	t.Helper()
	r := newRunnerWith(t, sandbox.Config{Isolation: mode, Prestart: 1})
	s, err := Start(context.Background(), r, Spec{})
	require.NoError(t, err)
	require.NoError(t, s.Close(context.Background()))
	return r
}

// forModes runs f once per isolation mode, cold (a runner without warm
// sandboxes) and warm, each with a runner of its own.
func forModes(t *testing.T, f func(t *testing.T, r *sandbox.Runner)) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Run("cold", func(t *testing.T) { f(t, newRunner(t, m)) })
			t.Run("warm", func(t *testing.T) { f(t, warmRunner(t, m)) })
		})
	}
}

func start(t testing.TB, r Runner, spec Spec) *Session {
	t.Helper()
	if spec.Sandbox.Limits.Wall == 0 {
		spec.Sandbox.Limits.Wall = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, r, spec)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	return s
}

// run execs req in the foreground and returns its result and output.
func run(t testing.TB, s *Session, req ExecRequest) (ExecResult, string, string) {
	t.Helper()
	var out, errb syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Exec(ctx, req, &out, &errb)
	require.NoError(t, err)
	return res, out.String(), errb.String()
}

func sh(script string) ExecRequest { return ExecRequest{Argv: []string{"/bin/sh", "-c", script}} }

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after 30s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hostListener is a TCP listener on the host's loopback that counts the
// connections it accepts.
type hostListener struct {
	ln net.Listener
	n  atomic.Int64
	wg sync.WaitGroup
}

func listen(t *testing.T) *hostListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := &hostListener{ln: ln}
	h.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.n.Add(1)
			_ = c.Close()
		}
	})
	t.Cleanup(func() { _ = ln.Close(); h.wg.Wait() })
	// The probe works on the host.
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	_ = c.Close()
	eventually(t, "the host connection is accepted", func() bool { return h.n.Load() == 1 })
	h.n.Store(0)
	return h
}

func (h *hostListener) port() int       { return h.ln.Addr().(*net.TCPAddr).Port }
func (h *hostListener) accepted() int64 { return h.n.Load() }
