package sandbox

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// The warm pool: per view (warmKey), up to Config.Prestart warm sandboxes
// (warm_sandbox.go) waiting for a task, refilled in the background after
// each run, at most maxWarmKeys views at once (least recently used
// evicted). Runs whose stdio are *os.File (a terminal: a pre-started
// process cannot be given the caller's files), with a caller's scratch
// directory (Spec.Scratch), or whose home a warm one's disk bound does not
// fit (warmServes), start cold.

// maxWarmKeys bounds how many different views are kept warm at once; a new
// one evicts the least recently used.
const maxWarmKeys = 4

// warmPool is a Runner's warm sandboxes: a warmView per view in use. It
// knows the Runner only through what newWarmPool and start give it.
type warmPool struct {
	// build makes one warm sandbox for a view (newWarm), hook editing the
	// view before it is built.
	build func(k warmKey, hook func(*nsConfig)) (*warmSandbox, error)
	// serves says whether a warm sandbox of mode m can serve spec
	// (Runner.warmServes).
	serves func(m mode, spec Spec) bool
	log    zerolog.Logger

	mu     sync.Mutex
	views  map[warmKey]*warmView // nil until start, and when Config.Prestart is 0
	size   int                   // warm sandboxes per view (Config.Prestart), set by start
	closed bool
	// disabled marks a mode whose warm start the kernel refused
	// (ErrUnavailable): stop trying it. Only that mode: on a host without
	// namespaces the Landlock mode stays warm.
	disabled map[mode]bool
	wg       sync.WaitGroup // refills and discards in flight
	failed   int            // warm setups that failed (discarded)
	// viewHook edits a warm view before it is built (tests: a setup that
	// fails).
	viewHook func(*nsConfig)
	// refillDelay is how long a template defers its next init while another
	// template of its pool has one made (refillDeferral; tests change it
	// before Start).
	refillDelay time.Duration
}

// warmView is the queue of one view's warm sandboxes, ready in the order
// they came (FIFO), and its counts.
type warmView struct {
	ready    chan *warmSandbox
	starting int
	// lent counts its templates running a task: they come back (putBack),
	// so a refill counts them as the view's.
	lent int
	// primed counts its waiting templates whose next task's init is made
	// (warmSandbox.primed); taken is closed (and replaced) at the next
	// take, for the templates that defer their refill (refillWait), which
	// deferring counts.
	primed    int
	taken     chan struct{}
	deferring int
	used      time.Time
}

// newWarmPool is a Runner's warm pool, empty until start: build makes a
// warm sandbox (newWarm), serves is Runner.warmServes.
func newWarmPool(build func(warmKey, func(*nsConfig)) (*warmSandbox, error), serves func(mode, Spec) bool, log zerolog.Logger) *warmPool {
	return &warmPool{build: build, serves: serves, log: log, refillDelay: refillDeferral}
}

// start creates the view of the default spec (defaults, no read-only
// paths, network none) with size warm sandboxes, in mode iso (auto: the
// namespace mode); none when size is 0 or iso is none.
func (ws *warmPool) start(size int, iso Isolation, defaults Limits) {
	if size == 0 || iso == IsolationNone {
		return
	}
	m, ok := isolatedModes[iso]
	if !ok {
		m = namespaceMode{} // auto: its first choice
	}
	if !ws.serves(m, Spec{Limits: defaults}) {
		return // the default disk limit cannot be enforced: no run would take one
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return
	}
	ws.size = size
	ws.views = map[warmKey]*warmView{}
	k := m.warmKey(Spec{Limits: defaults})
	ws.views[k] = &warmView{ready: make(chan *warmSandbox, size), used: time.Now()}
	ws.refillLocked(k)
}

// take returns a warm sandbox for spec if one is ready (creating the
// warmView of a view not seen before), and refill, which the caller calls
// once its run is over: refilling during the run would compete with it for
// the CPU on a small host.
func (ws *warmPool) take(spec Spec, k warmKey) (w *warmSandbox, refill func()) {
	refill = func() {}
	if spec.Scratch != "" || isFile(spec.Stdin) || isFile(spec.Stdout) || isFile(spec.Stderr) || !ws.serves(k.mode, spec) {
		return nil, refill
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.views == nil || ws.closed || ws.disabled[k.mode] {
		return nil, refill
	}
	p := ws.views[k]
	if p == nil {
		if len(ws.views) >= maxWarmKeys {
			ws.evictLocked()
		}
		p = &warmView{ready: make(chan *warmSandbox, ws.size)}
		ws.views[k] = p
	}
	p.used = time.Now()
	select {
	case w = <-p.ready:
		if w.template != nil {
			p.lent++
			w.lentFrom = p
			if w.primed {
				w.primed = false
				p.primed--
			}
			if p.taken != nil {
				close(p.taken) // the host is busy again: deferred refills start
				p.taken = nil
			}
		}
	default:
	}
	return w, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if !ws.closed {
			ws.refillLocked(k)
		}
	}
}

// evictLocked drops the least recently used view and its sandboxes.
func (ws *warmPool) evictLocked() {
	var oldest warmKey
	var t time.Time
	for k, p := range ws.views {
		if t.IsZero() || p.used.Before(t) {
			oldest, t = k, p.used
		}
	}
	p := ws.views[oldest]
	delete(ws.views, oldest)
	for {
		select {
		case w := <-p.ready:
			ws.discardLocked(w)
			continue
		default:
		}
		return
	}
}

// discardLocked discards w in the background (owned by ws.wg).
func (ws *warmPool) discardLocked(w *warmSandbox) {
	ws.wg.Add(1)
	go func() { defer ws.wg.Done(); w.discard() }()
}

// refillLocked starts warm sandboxes for k in the background until its
// view is full or a start fails.
func (ws *warmPool) refillLocked(k warmKey) {
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		for ws.prestart(k) {
		}
	}()
}

// prestart builds one warm sandbox for k and offers it to its view. It
// reports false when the view is full, the pool closed or the start
// failed.
func (ws *warmPool) prestart(k warmKey) bool {
	ws.mu.Lock()
	p := ws.views[k]
	if ws.closed || ws.disabled[k.mode] || p == nil || p.starting+p.lent+len(p.ready) >= cap(p.ready) {
		ws.mu.Unlock()
		return false
	}
	p.starting++
	hook := ws.viewHook
	ws.mu.Unlock()

	w, err := ws.build(k, hook)

	ws.mu.Lock()
	defer ws.mu.Unlock()
	p.starting--
	if err != nil {
		ws.failed++
		var se *SetupError
		step := "?"
		if errors.As(err, &se) {
			step = se.Step
		}
		if errors.Is(err, ErrUnavailable) {
			if ws.disabled == nil {
				ws.disabled = map[mode]bool{}
			}
			ws.disabled[k.mode] = true
		}
		ws.log.Warn().Err(err).Str("step", step).Str("mode", string(k.mode.isolation())).Msg("a warm sandbox failed its setup and was discarded; runs start cold")
		return false
	}
	if ws.closed || ws.views[k] != p {
		ws.discardLocked(w)
		return false
	}
	w.builtFor = p
	if w.primed { // its init made before it got here (markPrimed)
		p.primed++
	}
	p.ready <- w // never blocks: starting+len(ready) < cap was held
	return true
}

// putBack offers a template back to its view after a task; false when the
// view is gone (evicted, closed) or full: the caller then discards it.
func (ws *warmPool) putBack(w *warmSandbox) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	p := w.lentFrom
	ws.unlendLocked(w)
	if ws.closed || p == nil || ws.views[w.key] != p || len(p.ready) >= cap(p.ready) {
		return false
	}
	p.ready <- w
	return true
}

// The refill's deferral. After a task a template makes its next task's
// init (a fork, a Go runtime's start), and at once that competes with the
// end of the task it just ran: the worker storing the result, the broker
// delivering it, the client reading it and exiting. On a small host that
// CPU is taken from a one-off command's path (docs/benchmarks.md). So
// when no other template of the pool runs a task and another waiting
// template has its init made (the next task takes that one: the pool is
// FIFO), the template defers its own by refillDelay, until the pool's
// next take (the host is busy again: refill at once), or
// until a job comes for it first (then it makes the init for that job, as
// a template without one does). A busy host refills at once.
const refillDeferral = 10 * time.Millisecond

// refillWait says how long template w, back from a task, defers making its
// next init (0: not at all) and what ends the deferral early: the pool's
// next take. The caller calls refillDone after a deferral.
func (ws *warmPool) refillWait(w *warmSandbox) (time.Duration, <-chan struct{}) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	p := w.builtFor
	if p == nil || ws.closed || ws.views[w.key] != p || p.primed == 0 || p.lent > 0 || ws.refillDelay <= 0 {
		return 0, nil
	}
	if p.taken == nil {
		p.taken = make(chan struct{})
	}
	p.deferring++
	return ws.refillDelay, p.taken
}

// refillDone ends template w's deferral.
func (ws *warmPool) refillDone(w *warmSandbox) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w.builtFor.deferring--
}

// markPrimed records that template w, waiting (in its pool, or on its way
// there from prestart), has its next task's init made; a template already
// lent again is not counted: its task takes the init.
func (ws *warmPool) markPrimed(w *warmSandbox) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.lentFrom != nil || w.primed {
		return
	}
	w.primed = true
	if p := w.builtFor; p != nil && ws.views[w.key] == p {
		p.primed++
	}
}

// unlend records that a lent template will not come back (discarded).
func (ws *warmPool) unlend(w *warmSandbox) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.unlendLocked(w)
}

func (ws *warmPool) unlendLocked(w *warmSandbox) {
	if w.lentFrom != nil {
		w.lentFrom.lent--
		w.lentFrom = nil
	}
}

// close kills and reaps every warm sandbox and waits for the refills
// and discards in flight; later takes find none.
func (ws *warmPool) close() {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return
	}
	ws.closed = true
	var idle []*warmSandbox
	for k, p := range ws.views {
		for len(p.ready) > 0 {
			idle = append(idle, <-p.ready)
		}
		delete(ws.views, k)
	}
	ws.mu.Unlock()
	for _, w := range idle {
		w.discard()
	}
	ws.wg.Wait()
}

// ready is how many warm sandboxes of view k are ready (tests).
func (ws *warmPool) ready(k warmKey) int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if p := ws.views[k]; p != nil {
		return len(p.ready)
	}
	return 0
}

// sandboxes lists the ready warm sandboxes of every view (tests).
func (ws *warmPool) sandboxes() []*warmSandbox {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var all []*warmSandbox
	for _, p := range ws.views {
		for range len(p.ready) {
			w := <-p.ready
			all = append(all, w)
			p.ready <- w
		}
	}
	return all
}

func isFile(x any) bool {
	_, ok := x.(*os.File)
	return ok
}

// WarmStats counts the warm pool's sandboxes over every view.
type WarmStats struct {
	Ready    int // built and waiting for a task
	Starting int // being built (refills in flight)
}

// Warm reports the warm pool's state: how many sandboxes are ready and how
// many are being built. A host is fully warm when Starting is 0 and
// Ready is Config.Prestart per view in use.
func (r *Runner) Warm() WarmStats { return r.warm.stats() }

// stats counts the ready and starting warm sandboxes over every view.
func (ws *warmPool) stats() WarmStats {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var s WarmStats
	for _, p := range ws.views {
		s.Ready += len(p.ready)
		s.Starting += p.starting
	}
	return s
}
