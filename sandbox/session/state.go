package session

import (
	"time"

	"github.com/warrenhq/warren/sandbox"
)

// Done is closed once the sandbox has ended (Close, TTL, OOM, the agent's
// death) and every goroutine of the session has returned.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session lives, then a *GoneError saying why it
// ended (errors.Is(err, ErrSessionGone) holds).
func (s *Session) Err() error {
	select {
	case <-s.done:
		return s.gone
	default:
		return nil
	}
}

// Result is the sandbox run's result once Done is closed (nil before, or
// when the runner failed): InForce names the isolation layers the session
// ran under, OOMKills and PeakMemory its whole life.
func (s *Session) Result() *sandbox.Result {
	select {
	case <-s.done:
		return s.result
	default:
		return nil
	}
}

// Running is the number of foreground execs in flight: idle eviction must
// never end a session while it is above 0.
func (s *Session) Running() int { return int(s.running.Load()) }

// Background is the number of background commands the session started
// that still run (their processes, not the children they left: what Ps
// lists as background). Their end counts as activity (LastActivity), so
// idle eviction that counts them as running measures idleness from the
// last one's end.
func (s *Session) Background() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.background
}

// LastActivity is when the session last started or finished a request
// (exec, ps, kill, a file operation).
func (s *Session) LastActivity() time.Time { return time.Unix(0, s.last.Load()) }

func (s *Session) touch() { s.last.Store(time.Now().UnixNano()) }

// Home is the path of the session's home as its commands see it ($HOME):
// the host directory at that path in namespace and Landlock modes, but on
// a warm slot a tmpfs of the task's own mounted over the slot's directory
// there, which the host path does not show. The file methods serve the
// home the commands see.
func (s *Session) Home() string { return s.home }
