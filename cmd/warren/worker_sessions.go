package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/warrenhq/warren/worker"
	"github.com/warrenhq/warren/worker/hostsession"
)

// sessionFlags configure the sandbox sessions a worker serves.
type sessionFlags struct {
	SessionRoot    string        `name:"session-root" help:"Directory for sandbox session homes (default: $TMPDIR/warren-sessions)." type:"path"`
	SessionKeyFile string        `name:"session-key-file" help:"Hex key (at least 32 bytes: openssl rand -hex 32) that signs sandbox tokens; default: a random key per start. Changing it invalidates every token." type:"path"`
	SessionIdle    time.Duration `name:"session-idle" help:"Default idle timeout of a sandbox." default:"10m"`
	SessionTTL     time.Duration `name:"session-ttl" help:"Default lifetime of a sandbox." default:"1h"`
	SessionMaxTTL  time.Duration `name:"session-max-ttl" help:"Longest lifetime a create may ask for." default:"24h"`
}

// isolatedSessions starts a session of an isolated worker: the adapter of
// package sandbox/session's Start goes here once it is merged. Until then
// only a worker without isolation (--insecure-no-isolation) serves
// sessions.
var isolatedSessions worker.SessionFactory

// sessions is the host's sandbox sessions on w, or nil when it serves none.
func (h *host) sessions(w *worker.Worker) (*worker.Sessions, error) {
	f := h.f
	factory := isolatedSessions
	if f.Isolation == "none" {
		factory = hostsession.Start
	}
	if factory == nil {
		h.log.Info().Msg("sandbox sessions not served: this build has no isolated session primitive yet (package sandbox/session)")
		return nil, nil
	}
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
