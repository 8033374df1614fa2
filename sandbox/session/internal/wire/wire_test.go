package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMessagesRoundTrip(t *testing.T) {
	started := time.Unix(1700000000, 123456789)
	exec := Exec{Argv: []string{"sh", "-c", "echo \x00\xff"}, Env: []string{"A=b"}, Cwd: "sub", Stdin: []byte{0, 1, 2}, Background: true, Timeout: time.Second}
	var e2 Exec
	require.NoError(t, e2.Unmarshal(exec.Marshal()))
	require.Equal(t, exec, e2)

	ended := started.Add(time.Second)
	ps := PsReply{Processes: []Process{
		{ExecID: 7, PID: 42, Argv: []string{"sleep", "1"}, Started: started, Background: true},
		{ExecID: 8, PID: 43, Argv: []string{"false"}, Started: started, Background: true, Ended: ended, ExitCode: -1, Signal: 15},
	}}
	var p2 PsReply
	require.NoError(t, p2.Unmarshal(ps.Marshal()))
	require.Len(t, p2.Processes, 2)
	require.True(t, p2.Processes[0].Started.Equal(started))
	require.True(t, p2.Processes[0].Ended.IsZero(), "a running command has no end")
	require.True(t, p2.Processes[1].Ended.Equal(ended))
	for i := range p2.Processes {
		p2.Processes[i].Started = started
	}
	p2.Processes[1].Ended = ended
	require.Equal(t, ps, p2)

	for _, c := range []struct {
		in  interface{ Marshal() []byte }
		out interface{ Unmarshal([]byte) error }
	}{
		{Hello{Version: Version, PID: 1, UID: 1000}, &Hello{}},
		{Started{PID: 9}, &Started{}},
		{Exit{ExitCode: -1, Signal: "SIGKILL", TimedOut: true, Wall: time.Millisecond}, &Exit{}},
		{Kill{PID: 3, Signal: 15}, &Kill{}},
		{Reply{Code: CodeNoProcess, Message: "gone"}, &Reply{}},
	} {
		b := c.in.Marshal()
		require.NoError(t, c.out.Unmarshal(b))
		require.Equal(t, b, c.out.(interface{ Marshal() []byte }).Marshal())
		require.ErrorIs(t, c.out.Unmarshal(append(b, 0)), ErrFrame, "trailing bytes are refused")
	}
}

func TestFramesRoundTripAndRefusals(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteFrame(&buf, TypeStdout, 5, []byte("data")))
	require.NoError(t, WriteFrame(&buf, TypePs, 6, nil))
	r := NewReader(&buf)
	f, err := r.ReadFrame()
	require.NoError(t, err)
	require.Equal(t, Frame{Type: TypeStdout, ID: 5, Payload: []byte("data")}, f)
	f, err = r.ReadFrame()
	require.NoError(t, err)
	require.Equal(t, TypePs, f.Type)
	require.Equal(t, uint32(6), f.ID)
	_, err = r.ReadFrame()
	require.ErrorIs(t, err, io.EOF)

	for name, c := range map[string]struct {
		in   []byte
		want error
	}{
		"too short":    {[]byte{0, 0, 0, 4, 1, 0, 0, 0}, ErrFrame},
		"too long":     {[]byte{0xff, 0xff, 0xff, 0xff}, ErrFrame},
		"unknown type": {AppendFrame(nil, 0, 1, nil), ErrFrame},
		"type past":    {AppendFrame(nil, typeEnd, 1, nil), ErrFrame},
		"cut header":   {[]byte{0, 0, 0, 9, 1}, io.ErrUnexpectedEOF},
		"cut payload":  {AppendFrame(nil, TypeStdout, 1, []byte("abc"))[:10], io.ErrUnexpectedEOF},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(c.in)).ReadFrame()
			require.ErrorIs(t, err, c.want)
		})
	}
	require.ErrorIs(t, WriteFrame(io.Discard, TypeExec, 1, make([]byte, MaxFrame)), ErrFrame)
}

// FuzzReadFrame: whatever the agent's stream holds, the decoders return
// frames or an error, never panic, and what decodes re-encodes the same.
func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, TypeHello, 0, Hello{Version: Version, PID: 1}.Marshal()))
	f.Add(AppendFrame(nil, TypeExec, 3, Exec{Argv: []string{"true"}, Env: []string{"A=B"}, Stdin: []byte("x")}.Marshal()))
	f.Add(AppendFrame(nil, TypePsReply, 4, PsReply{Processes: []Process{{PID: 2, Argv: []string{"a"}}}}.Marshal()))
	f.Add(AppendFrame(AppendFrame(nil, TypeExit, 9, Exit{ExitCode: 2}.Marshal()), TypeKillReply, 1, Reply{Code: 1, Message: "m"}.Marshal()))
	f.Add([]byte{0, 0, 0, 5, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for {
			fr, err := r.ReadFrame()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrFrame) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(fr.Payload) > MaxFrame {
				t.Fatalf("payload of %d bytes", len(fr.Payload))
			}
			for _, m := range []interface {
				Unmarshal([]byte) error
				Marshal() []byte
			}{&Hello{}, &Exec{}, &Started{}, &Exit{}, &Kill{}, &Reply{}, &PsReply{}} {
				if err := m.Unmarshal(fr.Payload); err != nil {
					if !errors.Is(err, ErrFrame) {
						t.Fatalf("%T: untyped error %v", m, err)
					}
					continue
				}
				// Canonical re-encoding decodes to the same message.
				again := m.Marshal()
				if err := m.Unmarshal(again); err != nil {
					t.Fatalf("%T: re-encoding does not decode: %v", m, err)
				}
				if !bytes.Equal(again, m.Marshal()) {
					t.Fatalf("%T: re-encoding is not stable", m)
				}
			}
		}
	})
}
