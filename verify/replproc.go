package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/warrenhq/warren/sandbox"
)

// errReplDead means the REPL process ended or broke the protocol; the
// process is killed and the slot respawns it.
var errReplDead = errors.New("verify: REPL process died or broke the protocol")

// errReplTimeout means a request outlived its limit; the process is killed.
var errReplTimeout = errors.New("verify: REPL request timed out")

// errNoHandle means the sandbox gave no handle on the process (isolation
// none calls no Spec.Started): its memory cannot be read.
var errNoHandle = errors.New("verify: no sandbox handle on the REPL process")

// replProc is one long-running sandboxed REPL process. One request is in
// flight at a time (the protocol has no request ids).
type replProc struct {
	header    string
	headerEnv int
	uses      int
	nextEnv   int // the env id the REPL will assign next; every cmd gets one

	stdin  *os.File
	stdout *os.File
	out    *bufio.Reader
	cancel context.CancelFunc
	done   chan struct{}
	stderr *cappedBuffer // written by the sandbox until done

	mu        sync.Mutex
	handle    sandbox.Handle // set by Spec.Started once the process runs
	res       *sandbox.Result
	err       error
	killedUs  bool // we killed it while it was still running
	closeOnce sync.Once
}

// replResponse is the union of the REPL's response shapes we read.
type replResponse struct {
	Env      *int          `json:"env"`
	Messages []replMessage `json:"messages"`
	Sorries  []struct {
		Goal string `json:"goal"`
	} `json:"sorries"`
	Message string `json:"message"` // an Error response
}

type replMessage struct {
	Severity string `json:"severity"`
	Data     string `json:"data"`
	Pos      struct {
		Line int `json:"line"`
	} `json:"pos"`
}

// startRepl starts a REPL in a sandbox and imports header in it.
func startRepl(ctx context.Context, run RunFunc, p *Profile, header string) (*replProc, error) {
	// Real pipes, not io.Pipe: the child gets the fds, so no copying
	// goroutine keeps the run alive after the process exits, and its exit
	// closes stdout at once.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, &InfraError{Step: "repl pipe", Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, &InfraError{Step: "repl pipe", Err: err}
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rp := &replProc{header: header, stdin: inW, stdout: outR, out: bufio.NewReaderSize(outR, 64<<10), cancel: cancel,
		done: make(chan struct{}), stderr: &cappedBuffer{n: int(p.Limits.OutputBytes)}}
	lim := p.sandboxLimits()
	// The process lives across many requests; each request has its own
	// timeout, enforced here. The sandbox's wall and CPU limits bound the
	// whole life of the process.
	life := time.Duration(p.Pool.MaxRequests+1)*p.Limits.Wall.D() + p.Pool.HeaderTimeout.D()
	lim.Wall, lim.CPU = life, life
	spec := sandbox.Spec{
		Argv:     p.Lean.replArgv(),
		Env:      p.Env,
		Stdin:    inR,
		Stdout:   outW,
		Stderr:   rp.stderr,
		ReadOnly: append([]string(nil), p.Toolchain...),
		Limits:   lim,
		Network:  sandbox.NetworkNone,
		Started: func(h sandbox.Handle) {
			rp.mu.Lock()
			rp.handle = h
			rp.mu.Unlock()
		},
	}
	go func() {
		defer close(rp.done)
		res, err := run(pctx, spec)
		rp.mu.Lock()
		rp.res, rp.err = res, err
		rp.mu.Unlock()
		_ = outW.Close()
		_ = inR.Close()
	}()
	resp, err := rp.request(ctx, p.Pool.HeaderTimeout.D(), map[string]any{"cmd": header})
	if err != nil {
		rp.kill()
		return nil, fmt.Errorf("verify: importing the header in a fresh REPL: %w (stderr: %s)", err, rp.stderr.String())
	}
	if resp.Env == nil || hasError(resp) {
		rp.kill()
		return nil, &StatementError{Msg: "the header does not elaborate: " + describe(resp)}
	}
	rp.headerEnv = *resp.Env
	return rp, nil
}

// replArgv is how a REPL starts: REPLArgv, or lake -d <project> env <repl>.
func (l *LeanConfig) replArgv() []string {
	if len(l.REPLArgv) > 0 {
		return append([]string(nil), l.REPLArgv...)
	}
	return []string{l.Lake, "-d", l.Project, "env", l.REPL}
}

// request sends one command and reads its response, killing the process
// on timeout, EOF, or anything that is not one JSON response.
func (rp *replProc) request(ctx context.Context, timeout time.Duration, req map[string]any) (*replResponse, error) {
	line, err := json.Marshal(req) // one line: newlines inside strings are escaped
	if err != nil {
		return nil, err
	}
	type result struct {
		resp *replResponse
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		if _, err := rp.stdin.Write(append(line, '\n', '\n')); err != nil {
			ch <- result{err: fmt.Errorf("%w: write: %v", errReplDead, err)}
			return
		}
		resp, err := rp.read()
		ch <- result{resp, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			rp.kill()
			return nil, r.err
		}
		if r.resp.Env != nil {
			if *r.resp.Env != rp.nextEnv {
				rp.kill()
				return nil, fmt.Errorf("%w: response env %d, expected %d (out of step)", errReplDead, *r.resp.Env, rp.nextEnv)
			}
			rp.nextEnv++
		}
		return r.resp, nil
	case <-t.C:
		rp.kill()
		return nil, errReplTimeout
	case <-ctx.Done():
		rp.kill()
		return nil, ctx.Err()
	}
}

// read accumulates lines up to a blank line and decodes them strictly.
func (rp *replProc) read() (*replResponse, error) {
	var b strings.Builder
	for {
		l, err := rp.out.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errReplDead, err)
		}
		if strings.TrimSpace(l) == "" {
			if b.Len() == 0 {
				continue
			}
			break
		}
		if b.Len()+len(l) > 16<<20 {
			return nil, fmt.Errorf("%w: response larger than 16 MiB", errReplDead)
		}
		b.WriteString(l)
	}
	var resp replResponse
	dec := json.NewDecoder(strings.NewReader(b.String()))
	if err := dec.Decode(&resp); err != nil || dec.More() {
		return nil, fmt.Errorf("%w: not one JSON response: %q", errReplDead, truncate(b.String(), 200))
	}
	return &resp, nil
}

// kill ends the process tree (the sandbox kills it when its context ends)
// and waits for it.
func (rp *replProc) kill() {
	if !rp.dead() {
		rp.mu.Lock()
		rp.killedUs = true
		rp.mu.Unlock()
	}
	rp.cancel()
	<-rp.done
	rp.closeOnce.Do(func() {
		_ = rp.stdin.Close()
		_ = rp.stdout.Close()
	})
}

// memory is the process's memory as its sandbox measures it
// (sandbox.Handle.Memory); errNoHandle when the sandbox gives no handle.
func (rp *replProc) memory() (int64, error) {
	rp.mu.Lock()
	h := rp.handle
	rp.mu.Unlock()
	if h == nil {
		return 0, errNoHandle
	}
	return h.Memory()
}

// dead reports whether the process has ended.
func (rp *replProc) dead() bool {
	select {
	case <-rp.done:
		return true
	default:
		return false
	}
}

// ended returns how the process ended, once it has.
func (rp *replProc) ended() (*sandbox.Result, bool, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.res, rp.killedUs, rp.err
}

func hasError(r *replResponse) bool {
	if r.Message != "" {
		return true
	}
	for _, m := range r.Messages {
		if m.Severity == "error" {
			return true
		}
	}
	return false
}

func describe(r *replResponse) string {
	if r.Message != "" {
		return r.Message
	}
	var b strings.Builder
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "%d: %s: %s\n", m.Pos.Line, m.Severity, m.Data)
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
