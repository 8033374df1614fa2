package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/warrenhq/warren/messages"
)

// ExecOption adjusts one Exec.
type ExecOption func(*execConfig)

type execConfig struct {
	beforePublish func(context.Context) error
}

// BeforePublish makes Exec run gate before it publishes the task, while
// it subscribes to the task's events and watches for its result (so a
// check such as "does a live worker serve this pool and profile?" costs no
// extra round trip on the command's path). A gate's error ends Exec with
// that error and no task published; the batch's manifest, written while
// the gate runs, is removed again.
func BeforePublish(gate func(context.Context) error) ExecOption {
	return func(c *execConfig) { c.beforePublish = gate }
}

// eventBuffer is how many live events may wait for the writer before the
// subscription drops some (reported as a gap).
const eventBuffer = 8192

// Exec runs one task somewhere in the fleet and streams its output live:
// stdout events to stdout, stderr events to stderr, in order. It subscribes
// to the task's reply subject before publishing, so no event is missed.
// Notices (a lost event, the task restarting on another worker after a
// crash: its output then starts over) go to stderr, prefixed "warren:".
//
// The Result is read from WARREN_RESULTS, the durable record; Exec returns
// it, or ctx's error after cancelling the task when ctx ends first, or an
// error matching ErrBrokerUnavailable once the connection has been down
// for Config.RetryFor (the task is not cancelled then). When no
// live output of the winning delivery arrived at all, the captured output of
// the result is written instead.
//
// Defaults: batch "exec-<unique>", id "exec", kind exec, attempt 1.
//
// Options: BeforePublish.
func (c *Client) Exec(ctx context.Context, t messages.Task, stdout, stderr io.Writer, opts ...ExecOption) (*messages.Result, error) {
	var o execConfig
	for _, opt := range opts {
		opt(&o)
	}
	if t.Batch == "" {
		t.Batch = "exec-" + strings.ToLower(nuid.Next())
	}
	t.Batch = messages.QualifyBatch(c.cfg.Tenant, t.Batch)
	t.ID = cmp.Or(t.ID, "exec")
	if t.Kind == "" {
		t.Kind = messages.KindExec
	}
	b, err := NewBatch([]messages.Task{t}, BatchOptions{InboxPrefixes: c.cfg.InboxPrefixes})
	if err != nil {
		return nil, err
	}
	t = b.Tasks[0]
	ctx, stop := c.awaitBroker(ctx, "exec")
	defer stop()

	// The gate runs while the subscription and the result watch are made
	// (each a round trip to the broker); no task is published before it
	// said yes. The manifest (Publish's step 1, a round trip of its own)
	// is written meanwhile, and removed again when the gate says no.
	manifest := make(chan attemptOne, 1)
	go func() { manifest <- c.writeAttemptOne(ctx, b) }()
	refused := func(err error) (*messages.Result, error) {
		c.dropAttemptOne(ctx, b, <-manifest)
		return nil, err
	}
	gate := make(chan error, 1)
	go func() {
		if o.beforePublish == nil {
			gate <- nil
			return
		}
		gate <- o.beforePublish(ctx)
	}()
	events := make(chan *nats.Msg, eventBuffer)
	sub, err := c.nc.ChanSubscribe(t.EffectiveReply(), events)
	if err != nil {
		<-gate
		return refused(fmt.Errorf("scheduler: exec: subscribe to events: %w", err))
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(eventBuffer, 64<<20)
	// The server must know the subscription before the task exists. It
	// does without a flush: it reads a connection's protocol in order, and
	// the SUB is written before the task's publication on this connection.

	if err := <-gate; err != nil {
		return refused(err)
	}

	if _, err := c.publish(ctx, b, manifest); err != nil {
		if away := brokerAway(ctx, &t); away != nil {
			return nil, away
		}
		if ctx.Err() != nil { // interrupted mid-publish: the task may be queued
			c.cancelExec(ctx, &t)
		}
		return nil, err
	}
	st := &execStream{stdout: stdout, stderr: stderr, batch: t.Batch, id: t.ID, attempt: t.EffectiveAttempt()}
	// The result: read once the final event says it is stored, or, for a
	// task still running after ResultWatch (or whose final event was lost,
	// or whose read found nothing: a replica behind), watched for.
	rw := c.newResultWait(ctx, messages.ResultSubject(t.Batch, t.EffectiveAttempt(), t.ID))
	defer rw.stop()
	watchAfter := time.NewTimer(c.cfg.ResultWatch)
	defer watchAfter.Stop()
	var (
		res   *messages.Result
		grace <-chan time.Time
	)
	for {
		select {
		case m := <-events:
			if strings.HasPrefix(m.Reply, "$JS.ACK.") {
				// A push consumer's delivery (another tenant can aim one
				// at this subject), never a worker's event.
				continue
			}
			st.handle(m.Data)
			if st.final && res == nil {
				if st.carried == nil {
					rw.read()
					continue
				}
				// The final event carried the stored result: no read.
				res = st.carried
				grace = time.After(c.cfg.EventGrace)
			}
			if res != nil && st.complete(res) {
				return st.finish(res), nil
			}
		case r := <-rw.out:
			switch {
			case r.err != nil:
				return nil, r.err
			case r.res == nil: // not found where it was read
				rw.watch()
				continue
			case res != nil:
				continue // the watch's copy of the result the read returned
			}
			res = r.res
			if st.complete(res) {
				return st.finish(res), nil
			}
			// Output may still be in flight on the core-NATS path.
			grace = time.After(c.cfg.EventGrace)
		case <-watchAfter.C:
			if res == nil {
				rw.watch()
			}
		case <-grace:
			st.notice("live output of delivery %d ended without its exit event; see the result for the captured output", res.Delivery)
			return st.finish(res), nil
		case <-ctx.Done():
			if away := brokerAway(ctx, &t); away != nil {
				return nil, away
			}
			c.cancelExec(ctx, &t)
			return nil, ctx.Err()
		}
	}
}

// brokerAway is the error of an Exec that gave up on a broker away for
// Config.RetryFor (nil when ctx ended otherwise): its task may be queued,
// and may still run, so it is not cancelled (nor could it be).
func brokerAway(ctx context.Context, t *messages.Task) error {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || !errors.Is(cause, ErrBrokerUnavailable) {
		return nil
	}
	return fmt.Errorf("%w; the task (batch %s) may still run: `warren results %s` shows its result once the broker is back", cause, t.Batch, t.Batch)
}

// cancelExec cancels an interrupted Exec's task, with a context of its own.
func (c *Client) cancelExec(ctx context.Context, t *messages.Task) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Unchecked: the task may still be on its way to the stream.
	if err := c.putCancel(cctx, t.Batch, t.EffectiveAttempt(), t.ID, "exec interrupted"); err != nil {
		c.log.Warn().Err(err).Msg("could not cancel the task")
	}
}

type resultOrErr struct {
	res *messages.Result // nil with a nil err: a read found none
	err error
}

// resultWait gets Exec its task's result: read (one direct get, once the
// final event came) and watched for (an ordered consumer on the result's
// subject, from the first look), each at most once, each answering on out;
// stop cancels both and waits for them.
type resultWait struct {
	c        *Client
	ctx      context.Context
	cancel   context.CancelFunc
	subject  string
	out      chan resultOrErr
	wg       sync.WaitGroup
	reading  bool
	watching bool
}

func (c *Client) newResultWait(ctx context.Context, subject string) *resultWait {
	ctx, cancel := context.WithCancel(ctx)
	return &resultWait{c: c, ctx: ctx, cancel: cancel, subject: subject, out: make(chan resultOrErr, 2)}
}

func (w *resultWait) stop() {
	w.cancel()
	w.wg.Wait()
}

// read reads the stored result once.
func (w *resultWait) read() {
	if w.reading {
		return
	}
	w.reading = true
	w.wg.Go(func() {
		r, err := w.c.readResult(w.ctx, w.subject)
		if err != nil && w.ctx.Err() == nil {
			w.c.log.Debug().Err(err).Msg("could not read the result; watching for it")
		}
		w.out <- resultOrErr{res: r} // nil: the watch decides
	})
}

// readResult reads the result stored on subject with one direct get by
// subject (no stream lookup, no consumer); nil when there is none.
func (c *Client) readResult(ctx context.Context, subject string) (*messages.Result, error) {
	prefix := cmp.Or(c.js.Options().APIPrefix, jetstream.DefaultAPIPrefix)
	if !strings.HasSuffix(prefix, ".") {
		prefix += "."
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AckTimeout)
	defer cancel()
	m, err := c.nc.RequestWithContext(ctx, prefix+"DIRECT.GET."+messages.ResultNamespace(subject).Results()+"."+subject, nil)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read result: %w", err)
	}
	if status := m.Header.Get("Status"); len(m.Data) == 0 && status != "" {
		if status == "404" {
			return nil, nil
		}
		return nil, fmt.Errorf("scheduler: read result: status %s %s", status, m.Header.Get("Description"))
	}
	return messages.DecodeResult(m.Data)
}

// watch watches for the result once.
func (w *resultWait) watch() {
	if w.watching {
		return
	}
	w.watching = true
	w.wg.Go(func() { w.c.awaitResult(w.ctx, w.subject, w.out) })
}

// awaitResult waits for the single result stored on subject.
func (c *Client) awaitResult(ctx context.Context, subject string, out chan<- resultOrErr) {
	cons, err := retry(ctx, c, "watch result", func() (jetstream.Consumer, error) {
		return c.js.OrderedConsumer(ctx, messages.ResultNamespace(subject).Results(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	})
	if err != nil {
		if ctx.Err() == nil {
			out <- resultOrErr{err: fmt.Errorf("scheduler: exec: watch result: %w", err)}
		}
		return
	}
	it, err := cons.Messages()
	if err != nil {
		out <- resultOrErr{err: fmt.Errorf("scheduler: exec: watch result: %w", err)}
		return
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				out <- resultOrErr{err: fmt.Errorf("scheduler: exec: watch result: %w", err)}
			}
			return
		}
		r, err := messages.DecodeResult(msg.Data())
		if err != nil {
			c.log.Warn().Err(err).Msg("skipping a result that does not decode")
			continue
		}
		out <- resultOrErr{res: r}
		return
	}
}

// execStream writes the live events of one task attempt in order.
type execStream struct {
	stdout, stderr io.Writer
	// Events of any other task on the subject (an inbox reply another
	// task aimed at) are ignored.
	batch, id string
	attempt   int
	delivery  int    // the delivery being shown
	next      uint64 // the seq expected next
	output    map[int]bool
	terminal  map[int]bool
	final     bool // the attempt's final event came: its result is stored
	// carried is the stored result the final event carried, if it did.
	carried *messages.Result
}

func (s *execStream) handle(data []byte) {
	ev, err := messages.DecodeEvent(data)
	if err != nil || ev.Attempt != s.attempt || ev.Batch != s.batch || ev.TaskID != s.id {
		return
	}
	if s.terminal == nil {
		s.terminal, s.output = map[int]bool{}, map[int]bool{}
	}
	switch {
	case ev.Delivery < s.delivery:
		return // a superseded delivery still talking
	case ev.Delivery > s.delivery:
		if s.delivery != 0 {
			s.notice("the task restarted (delivery %d on %s); its output starts over", ev.Delivery, cmp.Or(ev.Host, "another host"))
		}
		s.delivery, s.next = ev.Delivery, 1
	}
	switch {
	case ev.Seq < s.next:
		return // duplicate
	case ev.Seq > s.next:
		s.notice("%d live event(s) lost; the result holds the captured output", ev.Seq-s.next)
	}
	s.next = ev.Seq + 1
	switch ev.Type {
	case messages.EventStdout:
		s.output[ev.Delivery] = true
		_, _ = s.stdout.Write(ev.Data)
	case messages.EventStderr:
		s.output[ev.Delivery] = true
		_, _ = s.stderr.Write(ev.Data)
	}
	if ev.Final {
		s.final = true
		if len(ev.Result) > 0 {
			// Only a result of this very attempt and delivery counts; a
			// malformed one is read from the stream instead.
			r, err := messages.DecodeResult(ev.Result)
			if err == nil && r.Batch == s.batch && r.TaskID == s.id && r.Attempt == s.attempt && r.Delivery == ev.Delivery {
				s.carried = r
			}
		}
	}
	if ev.Terminal() {
		s.terminal[ev.Delivery] = true
	}
}

// complete reports whether the live output of r's delivery is all here:
// its final event came, or every event the worker sent before storing r
// (r.Events; all of the output precedes the result). The exit event after
// the result adds nothing the result does not hold, so Exec ends without
// waiting for it.
func (s *execStream) complete(r *messages.Result) bool {
	if s.terminal[r.Delivery] {
		return true
	}
	return r.Events > 0 && s.delivery == r.Delivery && s.next > r.Events
}

// finish falls back to the result's captured output when none of the
// winning delivery's output was streamed.
func (s *execStream) finish(r *messages.Result) *messages.Result {
	if !s.output[r.Delivery] {
		_, _ = s.stdout.Write(r.Stdout)
		_, _ = s.stderr.Write(r.Stderr)
	}
	return r
}

func (s *execStream) notice(format string, args ...any) {
	fmt.Fprintf(s.stderr, "warren: "+format+"\n", args...)
}
