package sandbox

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A warm sandbox's init was started before its task, so it cannot be
// given the task's stdio: it gets pipes, which the worker copies to and
// from the run's Spec. A cold run whose stdio includes a terminal gets
// them too (hasTerminal): the task never holds a descriptor of the
// caller's terminal.

// stdioPipes connect a pre-started init to a Spec's stdio.
type stdioPipes struct {
	inR, inW, outR, outW, errR, errW *os.File
}

func newStdioPipes() (*stdioPipes, error) {
	var p stdioPipes
	var errs [3]error
	p.inR, p.inW, errs[0] = os.Pipe()
	p.outR, p.outW, errs[1] = os.Pipe()
	p.errR, p.errW, errs[2] = os.Pipe()
	if err := errors.Join(errs[:]...); err != nil {
		p.close()
		return nil, err
	}
	return &p, nil
}

func (p *stdioPipes) files() []*os.File {
	return []*os.File{p.inR, p.inW, p.outR, p.outW, p.errR, p.errW}
}

func (p *stdioPipes) close() {
	for _, f := range p.files() {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeChildEnds closes the ends the init holds (it has its own copies).
func (p *stdioPipes) closeChildEnds() {
	for _, f := range []*os.File{p.inR, p.outW, p.errW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// pump copies spec's stdio to and from the pipes while run runs, then
// drains what the task wrote.
func (p *stdioPipes) pump(spec Spec, run func() (*Result, error)) (*Result, error) {
	go func() {
		if spec.Stdin != nil {
			_, _ = io.Copy(p.inW, spec.Stdin)
		}
		_ = p.inW.Close()
	}()
	stdout, stderr := spec.Stdout, spec.Stderr
	if stdout != nil && sameWriter(stdout, stderr) {
		// One writer for both streams (as exec.Cmd promises): one Write at
		// a time, or the two copies race on it.
		lw := &syncWriter{w: stdout}
		stdout, stderr = lw, lw
	}
	var copies sync.WaitGroup
	copyOut := func(dst io.Writer, src *os.File) {
		defer copies.Done()
		if dst == nil {
			dst = io.Discard
		}
		_, _ = io.Copy(dst, src)
	}
	copies.Add(2)
	go copyOut(stdout, p.outR)
	go copyOut(stderr, p.errR)
	res, err := run()
	// Every writer died with the pid namespace; bound the wait anyway, as
	// exec.Cmd's WaitDelay does.
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(time.Second):
		_ = p.outR.Close()
		_ = p.errR.Close()
		<-drained
	}
	return res, err
}

// sameWriter reports whether a and b are the same writer (==, when their
// type can be compared at all).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // not comparable: treated as different, as exec.Cmd does
		}
	}()
	return a == b
}

// syncWriter serialises the Writes of two copies into one writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *syncWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// hasTerminal reports whether any of spec's stdio is a file open on a
// terminal (one that answers TCGETS).
func hasTerminal(spec Spec) bool {
	return isTerminal(spec.Stdin) || isTerminal(spec.Stdout) || isTerminal(spec.Stderr)
}

func isTerminal(x any) bool {
	f, ok := x.(*os.File)
	if !ok || f == nil {
		return false
	}
	// Through SyscallConn, not Fd, which would put f in blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var tty bool
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		tty = err == nil
	})
	return tty
}
