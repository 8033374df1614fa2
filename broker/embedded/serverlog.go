package embedded

import (
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// serverLog is nats-server's logger: its warnings and errors go to the
// broker's logger (its notices at debug: the start-up banner, and not
// every connection's), and its first fatal error is kept for Start, which
// fails with it. A fatal error does not stop the process here: nats-server
// stops starting (a port taken, JetStream's store unusable) and Start
// reports why.
type serverLog struct {
	log zerolog.Logger

	mu    sync.Mutex
	fatal string
}

var _ server.Logger = (*serverLog)(nil)

func (l *serverLog) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l *serverLog) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l *serverLog) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l *serverLog) Debugf(string, ...any)           {}
func (l *serverLog) Tracef(string, ...any)           {}

func (l *serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error().Msg(msg)
	l.mu.Lock()
	if l.fatal == "" {
		l.fatal = msg
	}
	l.mu.Unlock()
}

func (l *serverLog) firstFatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

// readyPoll is how long each readiness check waits (nats-server checks
// every 25 ms within it).
const readyPoll = 50 * time.Millisecond

// waitReady waits until ns accepts connections, for at most d, and fails
// at once with the fatal error that stopped its start, if one did.
func (s *Server) waitReady(ns *server.Server, l *serverLog, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		if f := l.firstFatal(); f != "" {
			return fmt.Errorf("broker: nats-server did not start (data dir %s): %s", s.cfg.DataDir, f)
		}
		if ns.ReadyForConnections(min(readyPoll, max(time.Until(end), time.Millisecond))) {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("broker: nats-server not ready within %s (is port %d in use, or %s not writable?)", d, s.cfg.Port, s.cfg.DataDir)
		}
	}
}
