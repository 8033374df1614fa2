// Package wire is the framed protocol between a session's host side
// (package session) and its agent (package session/agent), spoken over the
// agent's stdin and stdout.
//
// A frame is a 4-byte big-endian length n (of what follows), one type byte,
// a 4-byte big-endian request id and n-5 bytes of payload. Payloads are
// built from uvarints, varints and length-prefixed byte strings (codec.go);
// every decoder checks every length against what is left, so a corrupt or
// hostile stream yields an error, never a panic or an allocation larger
// than MaxFrame.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol version the agent announces in its Hello; the
// host refuses any other.
const Version = 2

// MaxFrame bounds a frame's length (type + id + payload): an exec request
// carries its stdin (MaxStdin) in one frame.
const MaxFrame = MaxStdin + 1<<20

// MaxStdin bounds the stdin data of one exec request.
const MaxStdin = 16 << 20

// ChunkSize is the largest output chunk the agent sends in one frame.
const ChunkSize = 32 << 10

// headerLen is the type byte and the id.
const headerLen = 5

// Type is a frame's kind.
type Type uint8

// Frame types. Host to agent: Exec, Cancel, Ps, Kill. Agent to host:
// Hello, Started, Stdout, Stderr, Exit, PsReply, KillReply, Refused.
const (
	TypeHello Type = iota + 1
	TypeExec
	TypeStarted
	TypeStdout
	TypeStderr
	TypeExit
	TypeCancel
	TypePs
	TypePsReply
	TypeKill
	TypeKillReply
	TypeRefused
	typeEnd
)

// ErrFrame means the stream is not a valid frame sequence.
var ErrFrame = errors.New("wire: malformed frame")

// Frame is one decoded frame; Payload aliases the reader's buffer until the
// next ReadFrame.
type Frame struct {
	Type    Type
	ID      uint32
	Payload []byte
}

// Reader decodes frames from a stream.
type Reader struct {
	r   io.Reader
	hdr [4 + headerLen]byte
	buf []byte
}

// NewReader returns a Reader on r (buffer it: ReadFrame makes two reads).
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// ReadFrame returns the next frame. At a clean end of stream it returns
// io.EOF; a stream cut inside a frame is io.ErrUnexpectedEOF.
func (r *Reader) ReadFrame() (Frame, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:4]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(r.hdr[:4])
	if n < headerLen || n > MaxFrame {
		return Frame{}, fmt.Errorf("%w: length %d outside %d..%d", ErrFrame, n, headerLen, MaxFrame)
	}
	if _, err := io.ReadFull(r.r, r.hdr[4:]); err != nil {
		return Frame{}, noEOF(err)
	}
	t := Type(r.hdr[4])
	if t == 0 || t >= typeEnd {
		return Frame{}, fmt.Errorf("%w: unknown type %d", ErrFrame, t)
	}
	size := int(n) - headerLen
	if cap(r.buf) < size {
		r.buf = make([]byte, size)
	}
	r.buf = r.buf[:size]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return Frame{}, noEOF(err)
	}
	return Frame{Type: t, ID: binary.BigEndian.Uint32(r.hdr[5:]), Payload: r.buf}, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendFrame appends the encoding of one frame to dst.
func AppendFrame(dst []byte, t Type, id uint32, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(headerLen+len(payload)))
	dst = append(dst, byte(t))
	dst = binary.BigEndian.AppendUint32(dst, id)
	return append(dst, payload...)
}

// WriteFrame writes one frame in a single Write (a pipe write of up to
// PIPE_BUF is atomic; larger frames need the caller's lock anyway).
func WriteFrame(w io.Writer, t Type, id uint32, payload []byte) error {
	if headerLen+len(payload) > MaxFrame {
		return fmt.Errorf("%w: payload of %d bytes over the %d-byte frame limit", ErrFrame, len(payload), MaxFrame)
	}
	_, err := w.Write(AppendFrame(make([]byte, 0, 4+headerLen+len(payload)), t, id, payload))
	return err
}
