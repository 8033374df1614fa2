package session

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/warrenhq/warren/sandbox/session/internal/wire"
)

// call is one request in flight, by frame id.
type call struct {
	// Output of an exec; mu guards writing to them against the caller
	// having returned (dead).
	mu             sync.Mutex
	stdout, stderr io.Writer
	dead           bool

	// bg marks a background exec: its call stays registered after Exec
	// returns, until its exit; live is set (under Session.mu) once it
	// started, and counts in Session.background until the call goes.
	bg, live bool

	started chan int64     // exec: its pid (buffered)
	exit    chan wire.Exit // exec: how it ended (buffered)
	reply   chan wire.Frame
	err     chan error // the session ended under it (buffered)
}

func newCall(stdout, stderr io.Writer) *call {
	return &call{stdout: stdout, stderr: stderr, started: make(chan int64, 1), exit: make(chan wire.Exit, 1), reply: make(chan wire.Frame, 1), err: make(chan error, 1)}
}

func (c *call) write(t wire.Type, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.stdout
	if t == wire.TypeStderr {
		w = c.stderr
	}
	if c.dead || w == nil {
		return
	}
	_, _ = w.Write(p)
}

// abandon stops output reaching the caller's writers (it has returned).
func (c *call) abandon() {
	c.mu.Lock()
	c.dead = true
	c.mu.Unlock()
}

func (c *call) fail(err error) {
	select {
	case c.err <- err:
	default:
	}
}

// register allocates a frame id for c, refused once the session is gone.
func (s *Session) register(c *call) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone != nil {
		return 0, s.gone
	}
	for {
		s.nextID++
		if s.nextID == 0 {
			continue // id 0 is the hello's
		}
		if _, used := s.calls[s.nextID]; !used {
			break
		}
	}
	s.calls[s.nextID] = c
	return s.nextID, nil
}

func (s *Session) unregister(id uint32) {
	s.mu.Lock()
	s.drop(id)
	s.mu.Unlock()
}

func (s *Session) lookup(id uint32, remove bool) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[id]
	if remove {
		s.drop(id)
	}
	return c
}

// drop removes call id (s.mu held); a live background command that goes
// no longer counts, and its end is activity.
func (s *Session) drop(id uint32) {
	if c := s.calls[id]; c != nil && c.live {
		c.live = false
		s.background--
		s.touch()
	}
	delete(s.calls, id)
}

// started marks background call id as running.
func (s *Session) startedBg(id uint32, c *call) {
	s.mu.Lock()
	if s.calls[id] == c && !c.live {
		c.live = true
		s.background++
	}
	s.mu.Unlock()
}

// send writes one frame to the agent.
func (s *Session) send(t wire.Type, id uint32, payload []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := wire.WriteFrame(s.toAgent, t, id, payload); err != nil {
		if errors.Is(err, wire.ErrFrame) {
			return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
		// The agent is gone; its end reports why.
		return s.goneErr()
	}
	return nil
}

// goneErr waits for the session's end and returns why: a write that fails
// means the agent's stdin is closed, which the reader sees too.
func (s *Session) goneErr() error {
	<-s.done
	return s.gone
}

// read decodes the agent's frames until its stream ends, dispatching them
// to the calls in flight. A frame that breaks the protocol ends the
// session (GoneProtocol): the stream comes from inside the sandbox.
func (s *Session) read() {
	r := wire.NewReader(s.fromAgent)
	helloSeen := false
	for {
		f, err := r.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				s.protocolError(err)
			}
			return
		}
		if !helloSeen {
			if err := s.onHello(f); err != nil {
				s.protocolError(err)
				return
			}
			helloSeen = true
			continue
		}
		if err := s.dispatch(f); err != nil {
			s.protocolError(err)
			return
		}
	}
}

func (s *Session) onHello(f wire.Frame) error {
	if f.Type != wire.TypeHello {
		return fmt.Errorf("%w: first frame is type %d, not a hello", wire.ErrFrame, f.Type)
	}
	var h wire.Hello
	if err := h.Unmarshal(f.Payload); err != nil {
		return err
	}
	if h.Version != wire.Version {
		return fmt.Errorf("%w: the agent speaks protocol %d, this worker %d: install the agent built with this worker", ErrAgent, h.Version, wire.Version)
	}
	s.hello = h
	if s.lent {
		s.closeChildEnds() // the agent holds its own ends now
	} else {
		s.home = h.Home
	}
	s.helloCh <- nil
	return nil
}

func (s *Session) dispatch(f wire.Frame) error {
	switch f.Type {
	case wire.TypeStdout, wire.TypeStderr:
		if c := s.lookup(f.ID, false); c != nil {
			c.write(f.Type, f.Payload)
		}
	case wire.TypeStarted:
		var m wire.Started
		if err := m.Unmarshal(f.Payload); err != nil {
			return err
		}
		if c := s.lookup(f.ID, false); c != nil {
			if c.bg {
				s.startedBg(f.ID, c)
			}
			select {
			case c.started <- m.PID:
			default:
			}
		}
	case wire.TypeExit:
		var m wire.Exit
		if err := m.Unmarshal(f.Payload); err != nil {
			return err
		}
		if c := s.lookup(f.ID, true); c != nil {
			c.exit <- m
		}
	case wire.TypePsReply, wire.TypeKillReply, wire.TypeRefused:
		if c := s.lookup(f.ID, true); c != nil {
			f.Payload = append([]byte(nil), f.Payload...)
			c.reply <- f
		}
	default:
		return fmt.Errorf("%w: type %d is not an agent frame", wire.ErrFrame, f.Type)
	}
	return nil
}

// protocolError ends the session for a broken stream.
func (s *Session) protocolError(err error) {
	s.mu.Lock()
	if s.protoErr == nil {
		s.protoErr = err
	}
	s.mu.Unlock()
	s.cancel()
}
