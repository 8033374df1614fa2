package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/verify"
)

// Cancellation causes of a task's context.
var (
	errUserCancel = errors.New("cancelled by user")
	errShutdown   = errors.New("worker shutting down")
	errClaimLost  = errors.New("lost the claim on the task attempt")
)

// handle runs one delivered task of space s to its end: a stored result
// and an ack, a Nak for a retry elsewhere, or a dead letter and a Term.
// freeSlot gives its slot back once the sandbox is done (idempotent; the
// caller calls it again when handle returns).
func (w *Worker) handle(s *space, msg jetstream.Msg, freeSlot func()) {
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
	if derr == nil {
		derr = messages.CheckEnvelope(task, msg.Subject(), msg.Headers())
	}
	if derr != nil {
		w.refuse(msg, meta, derr)
		return
	}
	log := w.log.With().Str("batch", task.Batch).Str("task_id", task.ID).Int("attempt", task.EffectiveAttempt()).Int("delivery", delivery).Logger()

	// At most one run of the attempt at a time: claim it, or wait for the
	// run that holds it. A waiting delivery emits no events.
	held, stored, err := w.awaitClaim(msg, meta, task)
	switch {
	case stored:
		log.Debug().Msg("another run of this attempt stored its result; acking this delivery")
		w.ack(msg)
		return
	case errors.Is(err, errShutdown):
		_ = msg.Nak()
		return
	case err != nil:
		log.Warn().Err(err).Msg("could not claim the task attempt; retrying")
		_ = msg.NakWithDelay(w.cfg.RetryBase)
		return
	}
	defer w.claims.release(held)
	// A redelivery after a lost ack, or the run we waited for stored its
	// result and released the claim between two looks: stored already.
	switch stored, err := w.resultStored(task); {
	case err != nil:
		// Running now could run a finished attempt again: come back later.
		log.Warn().Err(err).Msg("cannot tell whether the attempt has a result; retrying")
		w.claims.release(held)
		_ = msg.NakWithDelay(w.cfg.RetryBase)
		return
	case stored:
		log.Debug().Msg("result already stored; acking this delivery")
		held.settle()
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
		res.FinishedAt = time.Now().UTC()
		if w.finish(msg, meta, em, res, held) {
			held.settle()
		}
		return
	}

	ctx, cancel := context.WithCancelCause(w.workCtx)
	defer cancel(nil)
	unregister := w.cancels.track(task.Batch, task.EffectiveAttempt(), task.ID, cancel)
	defer unregister()

	stopHB := w.heartbeat(msg, em, held, cancel)
	w.metrics.taskStarted(task.EffectiveProfile(), delivery, meta.Timestamp)
	res, runErr := w.execute(ctx, run, delivery, meta.Sequence.Stream, em)
	stopHB()
	// The sandbox is done: its slot takes the next task while this one's
	// result is stored and acked (the claim is held until then, so no
	// other run of the attempt starts). At most Capacity tasks finish at
	// once; past that this one waits holding its slot.
	w.finishing <- struct{}{}
	defer func() { <-w.finishing }()
	freeSlot()

	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errShutdown) && res == nil || errors.Is(cause, errShutdown) && res.Status != messages.StatusOK:
		// Killed by our own shutdown: not the task's fault; run it elsewhere.
		em.emit(messages.EventError, "worker shutting down; the task will be retried elsewhere", nil)
		w.claims.release(held)
		_ = msg.Nak()
		return
	case errors.Is(cause, errClaimLost):
		// Another run took the attempt over (our claim expired): its result
		// is the one; this delivery comes back and waits for it.
		em.emit(messages.EventError, "this run lost its claim on the task attempt to another run; that run's result is the one", nil)
		_ = msg.NakWithDelay(w.cfg.Heartbeat)
		return
	case runErr != nil:
		w.retryOrDeadLetter(msg, meta, task, delivery, em, runErr)
		return
	case errors.Is(cause, errUserCancel):
		res.Status = messages.StatusCancelled
		res.Error = &messages.Error{Code: messages.CodeCancelled, Msg: "cancelled while running"}
	}
	if w.finish(msg, meta, em, res, held) {
		held.settle()
	}
}

// execute runs the task and maps the sandbox outcome to a result. An error
// means the task could not be run here (infrastructure), not that it failed.
func (w *Worker) execute(ctx context.Context, t *messages.Task, delivery int, seq uint64, em *emitter) (res *messages.Result, err error) {
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
	if w.taskStarted != nil {
		select {
		case w.taskStarted <- t.ID:
		case <-time.After(time.Second):
		}
	}

	var sres *sandbox.Result
	switch t.Kind {
	case messages.KindVerify:
		if w.cfg.Verifier == nil {
			return nil, fmt.Errorf("this worker has no verifier for profile %q", t.EffectiveProfile())
		}
		var out *verify.Outcome
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
		if invalid := w.overCeiling(t); invalid != nil {
			res.Status, res.Error = messages.StatusInvalid, invalid
			return res, nil
		}
		withInputs, invalid, ierr := w.withInputs(ctx, t)
		switch {
		case ierr != nil:
			return nil, ierr
		case invalid != nil:
			res.Status, res.Error = messages.StatusInvalid, invalid
			return res, nil
		}
		t = withInputs
		disk := w.diskFor(t)
		out := newOutputCollector(t.Outputs)
		spec := specFor(t, stdout, stderr, disk, out)
		spec.UnixSockets = w.unixSockets(t.Profile, spec.Isolation)
		sres, err = w.cfg.Runner.Run(ctx, spec)
		if err != nil {
			if errors.Is(err, sandbox.ErrInvalidSpec) {
				res.Status, res.ExitCode = messages.StatusInvalid, -1
				res.Error = &messages.Error{Code: messages.CodeInvalidField, Msg: err.Error()}
				return res, nil
			}
			return nil, err
		}
		fillFromSandbox(res, sres)
		if out != nil {
			if err := out.store(w, res, seq); err != nil {
				return nil, err
			}
		}
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
	res.Timeout, res.OOMKills = messages.TimeoutKind(s.Timeout), s.OOMKills
	res.DiskFull = s.DiskFull
	if s.ExecError != nil {
		// Not found / not executable: the task's failure (exit 127/126),
		// stored at once; the message is on stderr too.
		res.Error = &messages.Error{Code: messages.CodeExecFailed, Msg: s.ExecError.Error()}
	}
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

// finish stores the result (its output in the object store when too large
// for the message), announces the end and acks. It keeps the delivery and
// the claim alive meanwhile, through a broker outage too. It reports
// whether the result is stored.
func (w *Worker) finish(msg jetstream.Msg, meta *jetstream.MsgMetadata, em *emitter, res *messages.Result, held *heldClaim) bool {
	defer w.keepDelivery(msg, held)()
	err := w.spillOutputs(res, meta.Sequence.Stream)
	if err == nil {
		err = w.conclude(em, res, msg.Subject())
	}
	if err != nil {
		// Not stored: leave the message unacked so it is redelivered.
		w.log.Error().Err(err).Str("task_id", res.TaskID).Msg("could not store the result; the task will be redelivered")
		_ = msg.Nak()
		return false
	}
	w.ack(msg)
	w.done.Add(1)
	return true
}

// conclude stores a task attempt's result and then sends its last events:
// the error (for an invalid task or one that could not run) and the final
// exit, so a client that saw the final event finds the result stored. A
// result that could not be stored is announced by a non-final error event:
// the delivery is retried. subject is the task message's, for the metrics.
func (w *Worker) conclude(em *emitter, res *messages.Result, subject string) error {
	// Every output event precedes this: a client holding them all and the
	// result is done without the exit event (one round trip less).
	res.Events = em.sent()
	stored, err := w.storeResult(res)
	if err != nil {
		em.emit(messages.EventError, "could not store the result: "+err.Error(), nil)
		return err
	}
	if len(stored) > messages.FinalResultMax {
		stored = nil // the client reads it
	}
	w.metrics.taskFinished(subjectProfile(subject), res)
	if res.Error != nil && res.Status != messages.StatusCancelled {
		em.emitError(res.Error)
	}
	code := res.ExitCode
	em.emit(messages.EventExit, "", func(e *messages.Event) {
		e.ExitCode, e.Signal, e.Status, e.Final, e.Result = &code, res.Signal, res.Status, true, stored
	})
	return nil
}

// subjectProfile is the profile token of a task subject
// (warren.tasks.<pool>.<profile>.<batch>, the batch one or two tokens): the
// consumer's, so it is one this worker serves even when the body cannot be
// read.
func subjectProfile(subject string) string {
	parts := strings.SplitN(subject, ".", 5)
	if len(parts) != 5 {
		return "unknown"
	}
	return parts[3]
}

// ack acknowledges a delivery whose attempt has its result stored. It does
// not wait for the server's confirmation (a double ack is a round trip
// held on the slot, through the consumer's Raft group on a replicated
// stream): a lost ack is a redelivery, which finds the result and acks.
func (w *Worker) ack(msg jetstream.Msg) {
	if err := msg.Ack(); err != nil {
		w.log.Warn().Err(err).Msg("ack failed; the delivery will come back, find its result and ack")
	}
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
	w.metrics.runFailed(runErr)
	if delivery < w.cfg.Consumer.MaxDeliver {
		em.emitError(&messages.Error{Code: code, Msg: runErr.Error()})
		d := min(w.cfg.RetryBase<<(delivery-1), w.cfg.RetryMax)
		w.log.Warn().Err(runErr).Str("task_id", t.ID).Int("delivery", delivery).Dur("retry_in", d).Msg("task could not run; retrying")
		_ = msg.NakWithDelay(d)
		return
	}
	defer w.keepDelivery(msg, nil)()
	res := w.baseResult(t, delivery)
	res.Status = messages.StatusInfraError
	res.Error = &messages.Error{Code: code, Msg: fmt.Sprintf("gave up after %d deliveries: %v", delivery, runErr)}
	res.FinishedAt = time.Now().UTC()
	w.deadLetter(msg.Data(), msg.Headers(), "infra", t.Batch, t.EffectiveAttempt(), t.ID, meta.Sequence.Stream, res.Error.Msg)
	if err := w.conclude(em, res, msg.Subject()); err != nil {
		_ = msg.Nak()
		return
	}
	_ = msg.TermWithReason("infrastructure failure on every delivery")
}

// refuse handles an undecodable or invalid task: an invalid result, a dead
// letter with the payload, an error and a final exit event, and Term so it
// is never redelivered.
func (w *Worker) refuse(msg jetstream.Msg, meta *jetstream.MsgMetadata, derr error) {
	var merr *messages.Error
	if !errors.As(derr, &merr) {
		merr = &messages.Error{Code: messages.CodeMalformed, Msg: derr.Error()}
	}
	defer w.keepDelivery(msg, nil)()
	ident, answerable := identify(msg.Data(), msg.Headers(), msg.Subject(), meta.Sequence.Stream)
	if !answerable {
		// No batch the server authorised for its publisher: nobody to
		// answer but the fleet's dead letters.
		w.log.Warn().Str("subject", msg.Subject()).Str("code", string(merr.Code)).Str("reason", merr.Error()).Msg("refusing a task on a subject that names no batch")
		w.deadLetter(w.redactRefused(msg.Data(), merr, meta.Stream, meta.Sequence.Stream), msg.Headers(), "invalid", ident.Batch, ident.Attempt, ident.ID, meta.Sequence.Stream, merr.Error())
		_ = msg.TermWithReason("invalid task: " + string(merr.Code))
		w.done.Add(1)
		return
	}
	if stored, _ := w.resultStoredFor(ident.Batch, ident.Attempt, ident.ID); stored {
		// Another message of the attempt was answered already: like a
		// duplicate of a valid task, this one says nothing more.
		_ = msg.TermWithReason("invalid task: result already stored")
		return
	}
	w.log.Warn().Str("task_id", ident.ID).Str("batch", ident.Batch).Str("code", string(merr.Code)).Str("reason", merr.Error()).Msg("refusing invalid task")
	w.deadLetter(w.redactRefused(msg.Data(), merr, meta.Stream, meta.Sequence.Stream), msg.Headers(), "invalid", ident.Batch, ident.Attempt, ident.ID, meta.Sequence.Stream, merr.Error())
	res := &messages.Result{
		V: messages.Version, TaskID: ident.ID, Batch: ident.Batch, Attempt: ident.Attempt, Delivery: int(meta.NumDelivered),
		Status: messages.StatusInvalid, ExitCode: -1, Host: w.cfg.HostID, Error: merr,
		FinishedAt: time.Now().UTC(),
	}
	em := w.newEmitterTo(ident, int(meta.NumDelivered))
	if err := w.conclude(em, res, msg.Subject()); err != nil {
		w.log.Error().Err(err).Msg("could not store the invalid-task result; redelivering")
		_ = msg.Nak()
		return
	}
	_ = msg.TermWithReason("invalid task: " + string(merr.Code))
	w.done.Add(1)
}

// identify names a task whose body may not decode or validate, from what
// the server authorised: the batch is always the one its subject names
// (warren.tasks.<pool>.<profile>.<batch>, where a tenant's batch starts
// with the tenant's own name, which the server checked), never one its
// body or headers claim. So an invalid task is answered (its result, its
// events, its dead letter) only inside its publisher's batch: a body that
// names another tenant's batch files nothing there. The id, attempt and
// reply come from the body when it names that same batch, else the id and
// attempt from the headers unless they name another batch, else the stream
// sequence; events
// go to the default event subject unless the body's reply passed the reply
// rule for that batch. ok is false when the subject names no valid batch:
// nothing is answered then but the dead letter.
func identify(data []byte, h nats.Header, subject string, seq uint64) (ident messages.TaskIdentity, ok bool) {
	batch, ok := messages.TaskSubjectBatch(subject)
	if !ok {
		return messages.TaskIdentity{ID: fmt.Sprintf("seq-%d", seq), Batch: "unknown", Attempt: 1}, false
	}
	if body, ok := messages.PeekTask(data); ok && body.Batch == batch {
		return body, true
	}
	id := fmt.Sprintf("seq-%d", seq)
	attempt := 1
	if hb := h.Get(messages.HeaderBatch); hb == "" || hb == batch {
		if hid := h.Get(messages.HeaderTaskID); messages.ValidID(hid) {
			id = hid
		}
		if a, err := strconv.Atoi(h.Get(messages.HeaderAttempt)); err == nil && a > 0 {
			attempt = a
		}
	}
	return messages.TaskIdentity{ID: id, Batch: batch, Attempt: attempt, Reply: messages.EventSubject(batch, id)}, true
}

func (w *Worker) markRunning(d int64) {
	n := w.running.Add(d)
	w.nudgeRegistry()
	for {
		p := w.peak.Load()
		if n <= p || w.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// heartbeat keeps a running task's delivery and claim alive (InProgress
// resets AckWait, a refresh the claim's TTL) and tells event listeners it
// is alive. A claim lost to another run cancels this one.
func (w *Worker) heartbeat(msg jetstream.Msg, em *emitter, held *heldClaim, cancel context.CancelCauseFunc) (stop func()) {
	return every(w.cfg.Heartbeat, func() {
		_ = msg.InProgress()
		em.emit(messages.EventKeepalive, "", nil)
		ctx, cancelRefresh := context.WithTimeout(w.workCtx, w.cfg.Heartbeat)
		err := w.claims.refresh(ctx, held)
		cancelRefresh()
		if errors.Is(err, errClaimLost) {
			w.log.Warn().Err(err).Str("claim", held.key).Msg("stopping this run: another run holds the attempt")
			cancel(errClaimLost)
		}
	})
}

// every runs fn every d in a goroutine of its own until stop, which waits
// for a running fn to return.
func every(d time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	}()
	return func() { close(done); <-finished }
}
