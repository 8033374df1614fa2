package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/warrenhq/warren/messages"
)

// ReplPool is a warm pool of sandboxed Lean REPL processes for one
// lean-repl profile. Each slot holds at most one process; a check takes a
// slot, so one request is in flight per process. A process is recycled
// (killed, and a fresh one started in the background) after
// Pool.MaxRequests proofs, when its memory is above Pool.MaxMemoryBytes
// after a proof or before the next, and on timeout, crash or protocol
// anomaly (replpool_recycle.go). Recycling never changes the verdict of
// the proof that just finished.
type ReplPool struct {
	p     *Profile
	run   RunFunc
	log   zerolog.Logger
	slots chan *replSlot

	closeOnce sync.Once
	closed    chan struct{}
	all       []*replSlot
	// life bounds background respawns; Close cancels it (and then waits
	// for every slot, respawning ones included).
	life    context.Context
	endLife context.CancelFunc

	noHandle sync.Once // warn once that memory cannot be read
	statsMu  sync.Mutex
	started  int64
	recycled map[RecycleCause]int64
}

type replSlot struct{ proc *replProc }

// NewReplPool starts a pool and pre-warms Pool.Prewarm processes with the
// profile's header (waiting for them, so a worker advertises the profile
// only once it is warm).
func NewReplPool(ctx context.Context, run RunFunc, p *Profile, log zerolog.Logger) (*ReplPool, error) {
	pl := &ReplPool{p: p, run: run, log: log.With().Str("profile", p.Name).Logger(),
		slots: make(chan *replSlot, p.Pool.Size), closed: make(chan struct{}), recycled: map[RecycleCause]int64{}}
	pl.life, pl.endLife = context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	errs := make([]error, p.Pool.Size)
	for i := range p.Pool.Size {
		s := &replSlot{}
		pl.all = append(pl.all, s)
		if i < *p.Pool.Prewarm {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.proc, errs[i] = startRepl(ctx, run, p, p.Lean.Header)
				if errs[i] == nil {
					pl.noteStarted()
				}
			}()
		}
	}
	wg.Wait()
	for _, s := range pl.all {
		pl.slots <- s
	}
	if err := errors.Join(errs...); err != nil {
		pl.Close()
		return nil, err
	}
	return pl, nil
}

// Close kills every process and waits for them.
func (pl *ReplPool) Close() {
	pl.closeOnce.Do(func() {
		close(pl.closed)
		pl.endLife()
		for range pl.all {
			s := <-pl.slots
			if s.proc != nil {
				s.proc.kill()
				s.proc = nil
			}
		}
	})
}

// Check decides one proof on a warm process.
func (pl *ReplPool) Check(ctx context.Context, spec *messages.VerifySpec) (*messages.Verdict, Usage, error) {
	var s *replSlot
	select {
	case s = <-pl.slots:
	case <-ctx.Done():
		return nil, Usage{}, ctx.Err()
	case <-pl.closed:
		return nil, Usage{}, errors.New("verify: REPL pool closed")
	}
	defer pl.giveBack(s)
	start := time.Now()
	v, err := pl.checkOn(ctx, s, spec)
	u := Usage{Wall: time.Since(start), Steps: 1, InForce: "repl-pool"}
	// Stored environments never shrink: recycle a process that served its
	// share or grew too big. The verdict above stands either way.
	if rp := s.proc; rp != nil {
		rp.uses++
		if rp.uses >= pl.p.Pool.MaxRequests {
			pl.recycle(s, RecycleRequests, fmt.Sprintf("served %d proofs", rp.uses))
		} else {
			pl.recycleIfGrown(s)
		}
	}
	return v, u, err
}

// giveBack returns a slot to the pool. A slot whose process was recycled
// first starts a fresh one with the profile's header, in the background:
// the next proof finds it warm instead of paying the header import (with
// Mathlib, seconds), while the other slots keep serving.
func (pl *ReplPool) giveBack(s *replSlot) {
	if s.proc != nil {
		pl.slots <- s
		return
	}
	select {
	case <-pl.closed:
		pl.slots <- s
		return
	default:
	}
	go func() {
		defer func() { pl.slots <- s }()
		proc, err := startRepl(pl.life, pl.run, pl.p, pl.p.Lean.Header)
		if err != nil {
			// The next proof on this slot starts one itself, and reports
			// why it cannot.
			pl.log.Warn().Err(err).Msg("respawning a recycled REPL failed; the slot starts one on its next proof")
			return
		}
		select {
		case <-pl.closed:
			proc.kill()
		default:
			s.proc = proc
			pl.noteStarted()
		}
	}()
}

func (pl *ReplPool) checkOn(ctx context.Context, s *replSlot, spec *messages.VerifySpec) (*messages.Verdict, error) {
	if v := leanUnsafeSource(spec.Proof); v != nil {
		return v, nil
	}
	if v := leanHostIO(pl.p, spec.Proof); v != nil {
		return v, nil
	}
	header := spec.Header
	if header == "" {
		header = pl.p.Lean.Header
	}
	if s.proc != nil {
		switch {
		case s.proc.dead():
			cause, why := RecycleCrash, "it ended between proofs"
			if res, _, _ := s.proc.ended(); res != nil && res.TimedOut {
				cause, why = RecycleTimeout, "its sandbox's lifetime limit passed"
			}
			pl.recycle(s, cause, why)
		case s.proc.header != header:
			pl.recycle(s, RecycleHeader, "the proof needs another header")
		default:
			pl.recycleIfGrown(s) // it may have grown while idle (a task a proof left running)
		}
	}
	if s.proc == nil {
		proc, err := startRepl(ctx, pl.run, pl.p, header)
		if err != nil {
			return nil, err
		}
		s.proc = proc
		pl.noteStarted()
	}
	rp := s.proc
	n := nonce()
	timeout := pl.p.Limits.Wall.D()
	expected, check := "warren_expected_"+n, "warren_check_"+n

	// 1. The statement, elaborated on the header env before the proof runs.
	resp, err := rp.request(ctx, timeout, map[string]any{"cmd": fmt.Sprintf("def %s : Prop := %s", expected, spec.Statement), "env": rp.headerEnv})
	if err != nil {
		return pl.failed(s, err)
	}
	if resp.Env == nil || hasError(resp) {
		return nil, &StatementError{Msg: describe(resp)}
	}
	// 2. The proof, on top of the statement env.
	resp, err = rp.request(ctx, timeout, map[string]any{"cmd": spec.Proof, "env": *resp.Env})
	if err != nil {
		return pl.failed(s, err)
	}
	if resp.Env == nil || hasError(resp) {
		return reject(messages.ReasonCompileError, describe(resp)), nil
	}
	if incomplete(resp) {
		return reject(messages.ReasonIncomplete, describe(resp)), nil
	}
	// 3. The check constant and its axiom audit, in command mode.
	resp, err = rp.request(ctx, timeout, map[string]any{
		"cmd": fmt.Sprintf("theorem %s : %s := @%s\n#print axioms %s", check, expected, spec.Theorem, check), "env": *resp.Env})
	if err != nil {
		return pl.failed(s, err)
	}
	if resp.Env == nil || hasError(resp) {
		return reject(messages.ReasonStatementMismatch, describe(resp)), nil
	}
	axioms, err := parseLeanAxioms(resp.Messages, check)
	if err != nil {
		return reject(messages.ReasonCrash, err.Error()), nil
	}
	// 4. A sentinel with a fresh nonce: a proof that wrote forged responses
	// to stdout leaves the stream out of step, which shows here.
	n2 := nonce()
	resp, err = rp.request(ctx, timeout, map[string]any{"cmd": fmt.Sprintf("#eval %q", n2), "env": rp.headerEnv})
	if err != nil {
		return pl.failed(s, err)
	}
	if len(resp.Messages) != 1 || strings.TrimSpace(resp.Messages[0].Data) != fmt.Sprintf("%q", n2) {
		pl.recycle(s, RecycleCrash, "answers out of step with the requests (forged output?)")
		return reject(messages.ReasonCrash, "the REPL's answers are out of step with its requests (forged output?)"), nil
	}
	return leanAxiomVerdict(pl.p, axioms), nil
}

// failed turns a request failure into a verdict and drops the process.
func (pl *ReplPool) failed(s *replSlot, err error) (*messages.Verdict, error) {
	rp := s.proc
	pl.recycle(s, causeOf(err), err.Error())
	switch {
	case errors.Is(err, errReplTimeout):
		return reject(messages.ReasonTimeout, fmt.Sprintf("no answer within %s; the REPL was killed and will be respawned", pl.p.Limits.Wall.D())), nil
	case errors.Is(err, errReplDead):
		res, killedUs, runErr := rp.ended()
		if runErr != nil && res == nil {
			return nil, &InfraError{Step: "repl", Err: runErr}
		}
		out := &stepOutput{res: res, stderr: rp.stderr.String()}
		if res != nil && !killedUs { // it died on its own: say how
			if v := classifyEnd(pl.p, out); v != nil && v.Reason != messages.ReasonTimeout {
				return v, nil
			}
		}
		return reject(messages.ReasonCrash, err.Error()+"\n"+out.stderr), nil
	}
	return nil, err
}
