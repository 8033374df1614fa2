package scheduler

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/warrenhq/warren/messages"
)

// ProgressOptions tune a Progress.
type ProgressOptions struct {
	// Label prefixes every line, e.g. the batch id. Defaults to "results".
	Label string
	// Interval between plain lines when the writer is not a terminal.
	// Defaults to 2s.
	Interval time.Duration
	// Terminal forces the bar (true) or plain lines (false). Defaults to
	// detecting whether the writer is a terminal.
	Terminal *bool
}

// Progress shows how far a batch got: a live bar with counts, rate and ETA
// on a terminal; otherwise a plain line every Interval (and a final one),
// which suits logs and CI. It is safe for concurrent use; Close it.
type Progress struct {
	mu      sync.Mutex
	w       io.Writer
	label   string
	total   int // -1 unknown
	done    int
	counts  map[messages.Status]int // results without a verdict, by status
	start   time.Time
	bar     *progressbar.ProgressBar
	stop    chan struct{}
	stopped chan struct{}
	closed  bool

	// accepted and rejected count results that carry a verdict (status
	// ok, the proof checked): a rejected proof is an outcome, not an error.
	accepted, rejected int
}

// statusOrder fixes the order counts are printed in.
var statusOrder = []messages.Status{
	messages.StatusOK, messages.StatusFailed, messages.StatusTimedOut, messages.StatusKilled,
	messages.StatusCancelled, messages.StatusInvalid, messages.StatusInfraError,
}

// NewProgress starts showing progress on w; total -1 means unknown (it can
// be set later with SetTotal).
func NewProgress(w io.Writer, total int, o ProgressOptions) *Progress {
	p := &Progress{
		w: w, label: cmp.Or(o.Label, "results"), total: total,
		counts: map[messages.Status]int{}, start: time.Now(),
		stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	term := isTerminal(w)
	if o.Terminal != nil {
		term = *o.Terminal
	}
	if term {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(p.label),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("tasks"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionFullWidth(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
		close(p.stopped)
		return p
	}
	go p.tick(cmp.Or(o.Interval, 2*time.Second))
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// SetTotal sets the number of results expected; -1 for unknown.
func (p *Progress) SetTotal(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
	if p.bar != nil {
		p.bar.ChangeMax(total)
	}
}

// Add records one result of status s that carries no verdict.
func (p *Progress) Add(s messages.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[s]++
	p.addedLocked()
}

// AddResult records one result: a checked proof (status ok with a verdict)
// counts as accepted or rejected, anything else by its status.
func (p *Progress) AddResult(r *messages.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case r.Status == messages.StatusOK && r.Verdict != nil && r.Verdict.Accepted:
		p.accepted++
	case r.Status == messages.StatusOK && r.Verdict != nil:
		p.rejected++
	default:
		p.counts[r.Status]++
	}
	p.addedLocked()
}

func (p *Progress) addedLocked() {
	p.done++
	if p.bar != nil {
		p.bar.Describe(p.label + " " + p.countsLocked())
		_ = p.bar.Add(1)
	}
}

// Close stops the ticker and prints a final line. Safe to call twice.
func (p *Progress) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		p.mu.Lock()
		if p.total < 0 || p.done < p.total {
			fmt.Fprintln(p.w) // Finish leaves the cursor on the bar's line
		}
		p.mu.Unlock()
		return
	}
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, p.lineLocked())
}

func (p *Progress) tick(every time.Duration) {
	defer close(p.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.mu.Lock()
			fmt.Fprintln(p.w, p.lineLocked())
			p.mu.Unlock()
		case <-p.stop:
			return
		}
	}
}

// lineLocked renders e.g.
// "b1: 40/100 done (ok 38, failed 2), 12.5/s, ETA 5s", or for proofs
// "verify: 9/9 done (3 accepted, 6 rejected), 1.8/s, took 5s".
func (p *Progress) lineLocked() string {
	var b strings.Builder
	elapsed := time.Since(p.start)
	if p.total >= 0 {
		fmt.Fprintf(&b, "%s: %d/%d done", p.label, p.done, p.total)
	} else {
		fmt.Fprintf(&b, "%s: %d done", p.label, p.done)
	}
	if c := p.countsLocked(); c != "" {
		fmt.Fprintf(&b, " (%s)", c)
	}
	rate := float64(p.done) / max(elapsed.Seconds(), 1e-3)
	fmt.Fprintf(&b, ", %.1f/s", rate)
	switch {
	case p.total >= 0 && p.done >= p.total:
		fmt.Fprintf(&b, ", took %s", elapsed.Round(100*time.Millisecond))
	case p.total > 0 && p.done > 0:
		eta := time.Duration(float64(p.total-p.done) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA %s", eta.Round(time.Second))
	}
	return b.String()
}

// countsLocked renders the counts: by status ("ok 38, failed 2"); once a
// verdict was seen, verdicts first and every count as "N what" ("3
// accepted, 6 rejected, 1 infra_error"), so an ok task whose proof was
// rejected is never shown as ok.
func (p *Progress) countsLocked() string {
	verdicts := p.accepted+p.rejected > 0
	item := func(what string, n int) string {
		if verdicts {
			return fmt.Sprintf("%d %s", n, what)
		}
		return fmt.Sprintf("%s %d", what, n)
	}
	var parts []string
	if verdicts {
		parts = append(parts, item("accepted", p.accepted), item("rejected", p.rejected))
	}
	for _, s := range statusOrder {
		if n := p.counts[s]; n > 0 {
			parts = append(parts, item(string(s), n))
		}
	}
	var newer []string
	for s, n := range p.counts { // statuses from a newer worker
		if !known(s) {
			newer = append(newer, item(string(s), n))
		}
	}
	sort.Strings(newer)
	return strings.Join(append(parts, newer...), ", ")
}

func known(s messages.Status) bool {
	for _, k := range statusOrder {
		if k == s {
			return true
		}
	}
	return false
}
