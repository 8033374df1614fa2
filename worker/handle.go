package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
)

const resultsStream = messages.StreamResults

// Cancellation causes of a task's context.
var (
	errUserCancel = errors.New("cancelled by user")
	errShutdown   = errors.New("worker shutting down")
)

// handle runs one delivered task to its end: a stored result and an ack, a
// Nak for a retry elsewhere, or a dead letter and a Term.
func (w *Worker) handle(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error().Err(err).Msg("message without JetStream metadata; terminating it")
		_ = msg.Term()
		return
	}
	delivery := int(meta.NumDelivered)
	task, derr := messages.DecodeTask(msg.Data())
	if derr == nil {
		derr = w.checkReply(task)
	}
	if derr != nil {
		w.refuse(msg, meta, derr)
		return
	}
	log := w.log.With().Str("batch", task.Batch).Str("task_id", task.ID).Int("attempt", task.EffectiveAttempt()).Int("delivery", delivery).Logger()

	// A redelivery after a lost ack: the result is already stored.
	if w.resultStored(task) {
		log.Debug().Msg("result already stored; acking redelivery")
		w.ack(msg)
		return
	}
	em := w.newEmitter(task, delivery)
	run, mask, serr := w.openSecrets(task)
	if serr != nil {
		w.refuseSecrets(msg, meta, task, delivery, em, serr)
		return
	}
	em.mask = mask
	if w.cancels.cancelled(task.Batch, task.EffectiveAttempt(), task.ID) {
		res := w.baseResult(task, delivery)
		res.Status, res.ExitCode = messages.StatusCancelled, -1
		res.Error = &messages.Error{Code: messages.CodeCancelled, Msg: "cancelled before it started"}
		w.finish(msg, em, res)
		return
	}

	ctx, cancel := context.WithCancelCause(w.workCtx)
	defer cancel(nil)
	unregister := w.cancels.track(task.Batch, task.EffectiveAttempt(), task.ID, cancel)
	defer unregister()

	stopHB := w.heartbeat(msg, em)
	res, runErr := w.execute(ctx, run, delivery, em)
	stopHB()

	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errShutdown) && res == nil || errors.Is(cause, errShutdown) && res.Status != messages.StatusOK:
		// Killed by our own shutdown: not the task's fault; run it elsewhere.
		em.emit(messages.EventError, "worker shutting down; the task will be retried elsewhere", nil)
		_ = msg.Nak()
		return
	case runErr != nil:
		w.retryOrDeadLetter(msg, meta, task, delivery, em, runErr)
		return
	case errors.Is(cause, errUserCancel):
		res.Status = messages.StatusCancelled
		res.Error = &messages.Error{Code: messages.CodeCancelled, Msg: "cancelled while running"}
	}
	w.finish(msg, em, res)
}

// execute runs the task and maps the sandbox outcome to a result. An error
// means the task could not be run here (infrastructure), not that it failed.
func (w *Worker) execute(ctx context.Context, t *messages.Task, delivery int, em *emitter) (res *messages.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("worker panic: %v\n%s", r, debug.Stack())
		}
	}()
	limit := t.Limits.OutputBytes
	if limit == 0 {
		limit = w.cfg.DefaultOutputBytes
	}
	stdout := &capture{em: em, typ: messages.EventStdout, limit: limit}
	stderr := &capture{em: em, typ: messages.EventStderr, limit: limit}
	res = w.baseResult(t, delivery)
	res.StartedAt = time.Now().UTC()
	w.markRunning(1)
	defer w.markRunning(-1)
	em.emit(messages.EventStarted, "", nil)
	if w.cfg.TaskStarted != nil {
		select {
		case w.cfg.TaskStarted <- t.ID:
		case <-time.After(time.Second):
		}
	}

	var sres *sandbox.Result
	switch t.Kind {
	case messages.KindVerify:
		if w.cfg.Verifier == nil {
			return nil, fmt.Errorf("this worker has no verifier for profile %q", t.EffectiveProfile())
		}
		var out *VerifyOutcome
		out, err = w.cfg.Verifier.Verify(ctx, w.cfg.Runner.Run, t)
		var invalid *messages.Error
		if errors.As(err, &invalid) {
			res.Status, res.Error = messages.StatusInvalid, invalid
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		res.Verdict = out.Verdict
		res.Status, res.ExitCode = messages.StatusOK, 0
		res.WallMS, res.CPUMS, res.PeakMemoryBytes = out.Wall.Milliseconds(), out.CPU.Milliseconds(), out.PeakMemory
		res.Sandbox = out.InForce
	default:
		sres, err = w.cfg.Runner.Run(ctx, specFor(t, stdout, stderr))
		if err != nil {
			if errors.Is(err, sandbox.ErrInvalidSpec) {
				res.Status, res.ExitCode = messages.StatusInvalid, -1
				res.Error = &messages.Error{Code: messages.CodeInvalidField, Msg: err.Error()}
				return res, nil
			}
			return nil, err
		}
		fillFromSandbox(res, sres)
	}
	res.FinishedAt = time.Now().UTC()
	res.Stdout, res.StdoutTruncated = stdout.result()
	res.Stderr, res.StderrTruncated = stderr.result()
	return res, nil
}

func fillFromSandbox(res *messages.Result, s *sandbox.Result) {
	res.ExitCode, res.Signal = s.ExitCode, s.Signal
	res.WallMS, res.CPUMS = s.Wall.Milliseconds(), s.CPU.Milliseconds()
	res.PeakMemoryBytes = s.PeakMemory
	res.Sandbox = s.InForce
	switch {
	case s.TimedOut:
		res.Status = messages.StatusTimedOut
	case s.Signal != "":
		res.Status = messages.StatusKilled
	case s.ExitCode == 0:
		res.Status = messages.StatusOK
	default:
		res.Status = messages.StatusFailed
	}
}

func (w *Worker) baseResult(t *messages.Task, delivery int) *messages.Result {
	return &messages.Result{
		V: messages.Version, TaskID: t.ID, Batch: t.Batch, Attempt: t.EffectiveAttempt(),
		Delivery: delivery, Kind: t.Kind, Host: w.cfg.HostID, ExitCode: -1,
	}
}

// finish stores the result, announces the exit and acks.
func (w *Worker) finish(msg jetstream.Msg, em *emitter, res *messages.Result) {
	if err := w.storeResult(res); err != nil {
		// Not stored: leave the message unacked so it is redelivered.
		w.log.Error().Err(err).Str("task_id", res.TaskID).Msg("could not store result; the task will be redelivered")
		em.emit(messages.EventError, "could not store the result: "+err.Error(), nil)
		_ = msg.Nak()
		return
	}
	code := res.ExitCode
	em.emit(messages.EventExit, "", func(e *messages.Event) {
		e.ExitCode, e.Signal, e.Status = &code, res.Signal, res.Status
	})
	w.ack(msg)
	w.done.Add(1)
}

func (w *Worker) ack(msg jetstream.Msg) {
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := msg.DoubleAck(ctx)
		cancel()
		if err == nil {
			return
		}
		w.log.Warn().Err(err).Int("try", i+1).Msg("ack failed")
	}
	// The result is stored; a redelivery will see it and ack.
}

// retryOrDeadLetter handles a task that could not run here: Nak with a
// growing delay, or, on the last allowed delivery, an infra_error result and
// a dead letter.
func (w *Worker) retryOrDeadLetter(msg jetstream.Msg, meta *jetstream.MsgMetadata, t *messages.Task, delivery int, em *emitter, runErr error) {
	code := messages.CodeInternal
	var setup *sandbox.SetupError
	switch {
	case errors.As(runErr, &setup):
		code = messages.CodeSandboxSetup
	case errors.Is(runErr, sandbox.ErrUnavailable), errors.Is(runErr, sandbox.ErrInsecureRefused):
		code = messages.CodeSandboxUnavailable
	}
	em.emit(messages.EventError, runErr.Error(), nil)
	if delivery < w.cfg.Consumer.MaxDeliver {
		d := min(w.cfg.RetryBase<<(delivery-1), w.cfg.RetryMax)
		w.log.Warn().Err(runErr).Str("task_id", t.ID).Int("delivery", delivery).Dur("retry_in", d).Msg("task could not run; retrying")
		_ = msg.NakWithDelay(d)
		return
	}
	res := w.baseResult(t, delivery)
	res.Status = messages.StatusInfraError
	res.Error = &messages.Error{Code: code, Msg: fmt.Sprintf("gave up after %d deliveries: %v", delivery, runErr)}
	w.deadLetter(msg.Data(), msg.Headers(), "infra", t.Batch, meta.Sequence.Stream, res.Error.Msg)
	if err := w.storeResult(res); err != nil {
		_ = msg.Nak()
		return
	}
	_ = msg.TermWithReason("infrastructure failure on every delivery")
}

// refuse handles an undecodable or invalid task: an invalid result, a dead
// letter with the payload, and Term so it is never redelivered.
func (w *Worker) refuse(msg jetstream.Msg, meta *jetstream.MsgMetadata, derr error) {
	var merr *messages.Error
	if !errors.As(derr, &merr) {
		merr = &messages.Error{Code: messages.CodeMalformed, Msg: derr.Error()}
	}
	id, batch, attempt := identify(msg, meta)
	w.log.Warn().Str("task_id", id).Str("batch", batch).Str("code", string(merr.Code)).Str("reason", merr.Error()).Msg("refusing invalid task")
	w.deadLetter(w.redactRefused(msg.Data(), merr, meta.Sequence.Stream), msg.Headers(), "invalid", batch, meta.Sequence.Stream, merr.Error())
	res := &messages.Result{
		V: messages.Version, TaskID: id, Batch: batch, Attempt: attempt, Delivery: int(meta.NumDelivered),
		Status: messages.StatusInvalid, ExitCode: -1, Host: w.cfg.HostID, Error: merr,
		FinishedAt: time.Now().UTC(),
	}
	if err := w.storeResult(res); err != nil {
		w.log.Error().Err(err).Msg("could not store the invalid-task result; redelivering")
		_ = msg.Nak()
		return
	}
	_ = msg.TermWithReason("invalid task: " + string(merr.Code))
	w.done.Add(1)
}

// identify names a task whose body may be unreadable: from the headers the
// scheduler sets, else from the subject and stream sequence.
func identify(msg jetstream.Msg, meta *jetstream.MsgMetadata) (id, batch string, attempt int) {
	h := msg.Headers()
	id, batch = h.Get(messages.HeaderTaskID), h.Get(messages.HeaderBatch)
	attempt, _ = strconv.Atoi(h.Get(messages.HeaderAttempt))
	if batch == "" || !messages.ValidID(batch) {
		parts := strings.Split(msg.Subject(), ".")
		batch = parts[len(parts)-1]
	}
	if id == "" || !messages.ValidID(id) {
		id = fmt.Sprintf("seq-%d", meta.Sequence.Stream)
	}
	if attempt <= 0 {
		attempt = 1
	}
	return id, batch, attempt
}

func (w *Worker) markRunning(d int64) {
	n := w.running.Add(d)
	for {
		p := w.peak.Load()
		if n <= p || w.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// heartbeat keeps a running task's delivery alive (InProgress resets
// AckWait) and tells event listeners it is alive.
func (w *Worker) heartbeat(msg jetstream.Msg, em *emitter) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(w.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
				em.emit(messages.EventKeepalive, "", nil)
			}
		}
	}()
	return func() { close(done); <-finished }
}
