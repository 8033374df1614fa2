package sandbox

import (
	"context"
	"io"
	"os"
	"runtime"
	"sync"
	"time"
)

// warmInit is a namespace-mode init started ahead of its run: cloned into
// fresh namespaces with its uid mapped, the Go runtime booted, blocked on
// its config. A run that takes one skips the clone and the runtime start,
// most of the start cost. Its stdio are pipes the worker copies to and
// from the run's Spec (a pre-started process cannot be given the caller's
// files), so runs whose Stdin/Stdout/Stderr are *os.File (a terminal)
// start cold instead.
type warmInit struct {
	uid, gid uint32
	jobs     chan warmJob
}

type warmJob struct {
	ctx context.Context
	l   initLaunch
	out chan warmOut
}

type warmOut struct {
	res *Result
	err error
}

// takeWarm returns a pre-started init if one is ready, and starts its
// replacement in the background.
func (r *Runner) takeWarm(spec Spec) *warmInit {
	if r.ns.warm == nil || isFile(spec.Stdin) || isFile(spec.Stdout) || isFile(spec.Stderr) {
		return nil
	}
	select {
	case w := <-r.ns.warm:
		go r.fillWarm()
		return w
	default:
		go r.fillWarm()
		return nil
	}
}

// fillWarm starts warm inits until the pool is full.
func (r *Runner) fillWarm() {
	for r.prestart() {
	}
}

func isFile(x any) bool {
	_, ok := x.(*os.File)
	return ok
}

// prestart starts one warm init and offers it to the Runner. It reports
// false when the pool is already full (or being filled) or the start failed.
func (r *Runner) prestart() bool {
	r.ns.warmMu.Lock()
	if r.ns.warmStarting+len(r.ns.warm) >= cap(r.ns.warm) {
		r.ns.warmMu.Unlock()
		return false
	}
	r.ns.warmStarting++
	r.ns.warmMu.Unlock()
	defer func() {
		r.ns.warmMu.Lock()
		r.ns.warmStarting--
		r.ns.warmMu.Unlock()
	}()

	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if r.ns.pool != nil {
		u, err := r.ns.pool.acquire()
		if err != nil {
			return false
		}
		uid, gid = u, u
	}
	w := &warmInit{uid: uid, gid: gid, jobs: make(chan warmJob)}
	ready := make(chan bool, 1)
	go w.serve(r, ready)
	if !<-ready {
		r.log.Warn().Uint32("uid", uid).Msg("pre-starting a sandbox init failed; runs start cold")
		_ = r.releaseUID(uid, "", nil)
		return false
	}
	r.ns.warm <- w
	return true
}

// serve owns the warm init for its whole life, on one locked OS thread
// (the init's Pdeathsig is tied to the thread that cloned it).
func (w *warmInit) serve(r *Runner, ready chan<- bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	inR, inW, err1 := os.Pipe()
	outR, outW, err2 := os.Pipe()
	errR, errW, err3 := os.Pipe()
	if err1 != nil || err2 != nil || err3 != nil {
		for _, f := range []*os.File{inR, inW, outR, outW, errR, errW} {
			if f != nil {
				f.Close()
			}
		}
		ready <- false
		return
	}
	s, err := startInit(nsAttr(w.uid, w.gid, r.ns.pool != nil), "", inR, outW, errW)
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		ready <- false
		return
	}
	defer s.close()
	ready <- true

	job := <-w.jobs
	spec := job.l.spec
	go func() {
		if spec.Stdin != nil {
			_, _ = io.Copy(inW, spec.Stdin)
		}
		inW.Close()
	}()
	var copies sync.WaitGroup
	pump := func(dst io.Writer, src *os.File) {
		defer copies.Done()
		if dst == nil {
			dst = io.Discard
		}
		_, _ = io.Copy(dst, src)
	}
	copies.Add(2)
	go pump(spec.Stdout, outR)
	go pump(spec.Stderr, errR)
	res, err := s.finish(job.ctx, job.l)
	// Every writer died with the pid namespace; bound the wait anyway, as
	// exec.Cmd's WaitDelay does.
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(time.Second):
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	job.out <- warmOut{res: res, err: err}
}

// run hands the launch to the warm init's goroutine and waits for it.
func (w *warmInit) run(ctx context.Context, l initLaunch) (*Result, error) {
	out := make(chan warmOut, 1)
	w.jobs <- warmJob{ctx: ctx, l: l, out: out}
	o := <-out
	return o.res, o.err
}
