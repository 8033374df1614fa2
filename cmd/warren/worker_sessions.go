//go:build !client

package main

import (
	"context"
	"errors"
	"sync"

	sbxsession "github.com/warrenhq/warren/sandbox/session"
	"github.com/warrenhq/warren/worker"
)

// sessions is the host's sandbox sessions on w, or nil when it serves
// none: every worker serves them through the real primitive (under
// --isolation none its commands run unconfined, as its tasks do), unless
// the agent binary is missing, which it says at start.
func (h *host) sessions(w *worker.Worker) (*worker.Sessions, error) {
	f := h.f
	if err := sbxsession.CheckAgent(f.SessionAgent); err != nil {
		h.log.Error().Err(err).Msg("sandbox sessions not served (tasks are): the session agent is missing or unusable; run `make build`, which puts warren-sandbox-agent next to warren, or pass --session-agent")
		return nil, nil
	}
	factory := worker.PrimitiveSessions(f.SessionAgent)
	log := h.log
	return worker.NewSessions(w, worker.SessionsConfig{Factory: factory, Root: f.SessionRoot, KeyFile: f.SessionKeyFile,
		DefaultIdle: f.SessionIdle, DefaultTTL: f.SessionTTL, MaxTTL: f.SessionMaxTTL, InboxPrefixes: h.inboxes, Logger: &log})
}

// stopAll stops the worker and its sessions under the same drain deadline.
func stopAll(ctx context.Context, w *worker.Worker, s *worker.Sessions) error {
	if s == nil {
		return w.Stop(ctx)
	}
	var wg sync.WaitGroup
	var serr error
	wg.Add(1)
	go func() { defer wg.Done(); serr = s.Stop(ctx) }()
	werr := w.Stop(ctx)
	wg.Wait()
	return errors.Join(werr, serr)
}
