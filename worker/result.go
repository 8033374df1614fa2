package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// storeResult writes the single result of a task attempt, retrying through
// a broker outage for up to storeTimeout. A result already stored (by an
// earlier delivery) counts as stored: the broker keeps the first.
func (w *Worker) storeResult(res *messages.Result) (stored []byte, err error) {
	if w.beforeStore != nil {
		w.beforeStore(res)
	}
	data, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	subj := messages.ResultSubject(res.Batch, res.Attempt, res.TaskID)
	msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMsgID, "result."+messages.MsgID(res.Batch, res.TaskID, res.Attempt))
	stored = data
	err = w.retryStore("result "+subj, 5*time.Second, func(ctx context.Context) error {
		ack, err := w.js.PublishMsg(ctx, msg)
		switch {
		case broker.IsResultExists(err):
			stored = nil // another run's result is the one
			return nil
		case err == nil && ack.Duplicate:
			// An earlier try of this write was stored (its ack lost): the
			// same bytes, unless a run before this one stored under the
			// same message id; read it to be sure.
			stored = nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// retryStore runs a write (or a read a write depends on) until it
// succeeds, each try bounded by tryTimeout. While the broker is away (a
// restart, a full disk: broker.Unavailable) it retries for as long as the
// worker runs; after any other error for up to storeTimeout. A worker
// told to stop now (Stop's deadline passed) gives up after the current
// try: the unacked task is redelivered.
func (w *Worker) retryStore(what string, tryTimeout time.Duration, write func(context.Context) error) error {
	deadline := time.Now().Add(storeTimeout)
	b := newBackoff(100*time.Millisecond, 2*time.Second)
	for tries := 1; ; tries++ {
		ctx, cancel := context.WithTimeout(context.Background(), tryTimeout)
		err := write(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if w.workCtx.Err() != nil || !broker.Unavailable(err) && time.Now().After(deadline) {
			return fmt.Errorf("store %s: %w", what, err)
		}
		lvl := zerolog.DebugLevel
		if tries == 1 || tries%10 == 0 {
			lvl = zerolog.WarnLevel
		}
		w.log.WithLevel(lvl).Err(err).Str("what", what).Int("try", tries).Msg("storing failed; retrying")
		select {
		case <-time.After(b.next()):
		case <-w.workCtx.Done():
		}
	}
}

// storeTimeout bounds how long a finished task retries a write the broker
// refuses for another reason than being away.
const storeTimeout = 2 * time.Minute

// keepDelivery keeps msg's delivery (InProgress) and held's claim (when
// not nil) alive until the returned stop, while what a run concluded is
// being stored: a broker outage is waited out without the task being
// redelivered, counted as one more delivery, or its attempt taken over.
func (w *Worker) keepDelivery(msg jetstream.Msg, held *heldClaim) (stop func()) {
	return every(w.cfg.Heartbeat, func() {
		_ = msg.InProgress()
		if held != nil {
			ctx, cancel := context.WithTimeout(w.workCtx, w.cfg.Heartbeat)
			_ = w.claims.refresh(ctx, held)
			cancel()
		}
	})
}

// resultStored reports whether the attempt's result is already in RESULTS;
// an error means the broker could not say (during an outage, say).
func (w *Worker) resultStored(t *messages.Task) (bool, error) {
	return w.resultStoredFor(t.Batch, t.EffectiveAttempt(), t.ID)
}

func (w *Worker) resultStoredFor(batch string, attempt int, id string) (bool, error) {
	s := w.spaceOf(batch)
	if s == nil {
		return false, fmt.Errorf("look for the result of %s: %w", messages.ResultSubject(batch, attempt, id), errNoSpace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.results.GetLastMsgForSubject(ctx, messages.ResultSubject(batch, attempt, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("look for the result of %s: %w", messages.ResultSubject(batch, attempt, id), err)
	}
}

// resultHeaderRoom is kept free in a result message for its headers.
const resultHeaderRoom = 4 << 10

// spillOutputs moves captured stdout and stderr, the larger first, into
// the outputs object store while the encoded result would not fit the
// broker's max payload, and names the objects in the result. The bytes are
// all kept: only output_bytes truncates. seq is the task message's TASKS
// sequence, which with the delivery makes the object names unique to this
// run.
func (w *Worker) spillOutputs(res *messages.Result, seq uint64) error {
	limit := int(w.nc.MaxPayload()) - resultHeaderRoom
	for {
		data, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
		if len(data) <= limit {
			return nil
		}
		stream, out, obj := "stdout", &res.Stdout, &res.StdoutObject
		if len(res.Stderr) > len(res.Stdout) {
			stream, out, obj = "stderr", &res.Stderr, &res.StderrObject
		}
		if len(*out) == 0 {
			// Only a huge verdict message is left: keep its head.
			if res.Verdict != nil && len(res.Verdict.Messages) > 64<<10 {
				res.Verdict.Messages = res.Verdict.Messages[:64<<10] + "\n[cut: the checker's messages did not fit the result]"
				continue
			}
			return fmt.Errorf("result of %s is %d bytes with no output left to move out; the broker takes %d", res.TaskID, len(data), limit)
		}
		name := messages.OutputObjectName(res.Batch, res.Attempt, res.TaskID, seq, res.Delivery, stream)
		if err := w.putOutput(res.Batch, name, *out); err != nil {
			return err
		}
		*out, *obj = nil, name
	}
}

func (w *Worker) putOutput(batch, name string, data []byte) error {
	s := w.spaceOf(batch)
	if s == nil {
		return fmt.Errorf("store output %s: %w", name, errNoSpace)
	}
	return w.retryStore("output "+name, 30*time.Second, func(ctx context.Context) error {
		_, err := s.outputs.PutBytes(ctx, name, data)
		return err
	})
}

// errNoSpace: a batch of a tenant this worker does not serve (not
// registered, or removed while its task ran).
var errNoSpace = errors.New("its tenant is not served here")

// deadLetter copies a task's payload to the DLQ with the reason, before the
// caller Terms it (Term would not delete it from the Limits-retention TASKS
// stream, but the DLQ is where operators look). It is published expecting
// its per-attempt subject to be empty, so a redelivered task is
// dead-lettered once per reason however late it comes back (no dedup time
// window); the refusal of a second is success.
func (w *Worker) deadLetter(payload []byte, h nats.Header, reason, batch string, attempt int, id string, seq uint64, why string) {
	w.metrics.deadLettered(reason)
	if !messages.ValidBatchID(batch) {
		batch = "unknown"
	}
	msg := &nats.Msg{Subject: messages.DLQSubject(reason, batch, attempt, id), Data: payload, Header: nats.Header{}}
	for k, v := range h {
		if k != messages.HeaderMsgID {
			msg.Header[k] = v
		}
	}
	msg.Header.Set(messages.HeaderDLQReason, reason)
	if len(why) > 1024 {
		why = why[:1024]
	}
	msg.Header.Set(messages.HeaderDLQError, why)
	msg.Header.Set(messages.HeaderDLQStreamSeq, strconv.FormatUint(seq, 10))
	err := w.retryStore("dead letter "+msg.Subject, 10*time.Second, func(ctx context.Context) error {
		_, err := w.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(0))
		if isWrongLastSeq(err) {
			return nil // dead-lettered before, for this reason
		}
		return err
	})
	if err != nil {
		w.log.Error().Err(err).Uint64("stream_seq", seq).Msg("could not dead-letter task")
	}
}

// isWrongLastSeq reports whether the broker refused a publish because the
// subject's last sequence was not the expected one (10071, or 10164 on
// replicated streams).
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// maxDeliveriesAdvisory is published by the server when a task reached
// MaxDeliver without an ack: the worker that had it died on its last try.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// watchMaxDeliveries turns max-deliveries advisories of ns's task stream
// into a dead letter and an infra_error result, so a batch always
// completes. Workers share the subscription through a queue group: one
// handles each advisory.
func (w *Worker) watchMaxDeliveries(ns messages.Namespace) error {
	subj := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + ns.Tasks() + ".*"
	sub, err := w.nc.QueueSubscribe(subj, "warren-dlq", func(m *nats.Msg) {
		var adv maxDeliveriesAdvisory
		if err := json.Unmarshal(m.Data, &adv); err != nil {
			return
		}
		w.bg.Add(1)
		go func() { defer w.bg.Done(); w.handleMaxDeliveries(ns, adv) }()
	})
	if err != nil {
		return fmt.Errorf("worker: subscribe to max-deliveries advisories: %w", err)
	}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		<-w.pullCtx.Done()
		_ = sub.Unsubscribe()
	}()
	return nil
}

func (w *Worker) handleMaxDeliveries(ns messages.Namespace, adv maxDeliveriesAdvisory) {
	var raw *jetstream.RawStreamMsg
	err := w.retryStore("read task "+strconv.FormatUint(adv.StreamSeq, 10), 10*time.Second, func(ctx context.Context) error {
		stream, err := w.js.Stream(ctx, ns.Tasks())
		if err == nil {
			raw, err = stream.GetMsg(ctx, adv.StreamSeq)
		}
		return err
	})
	if err != nil {
		w.log.Error().Err(err).Uint64("stream_seq", adv.StreamSeq).Msg("max deliveries: task gone from the stream")
		return
	}
	why := fmt.Sprintf("no worker finished it in %d deliveries (workers died or timed out)", adv.Deliveries)
	var res *messages.Result
	var ident messages.TaskIdentity
	t, derr := messages.DecodeTask(raw.Data)
	if derr == nil {
		derr = messages.CheckEnvelope(t, raw.Subject, raw.Header)
	}
	if derr == nil {
		// Another message of the same attempt may be running, or the claim
		// of the worker that died not yet expired: the attempt's own result,
		// if it comes, wins over giving up.
		meta := &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: adv.StreamSeq}, NumDelivered: adv.Deliveries}
		held, stored, err := w.awaitClaim(nil, meta, t)
		if stored || err != nil {
			return
		}
		defer w.claims.release(held)
		// Holding the claim, storing is safe even when the broker cannot
		// say whether a result exists: RESULTS keeps the first.
		if stored, _ := w.resultStored(t); stored {
			return
		}
		res = w.baseResult(t, int(adv.Deliveries))
		ident = messages.TaskIdentity{ID: t.ID, Batch: t.Batch, Attempt: t.EffectiveAttempt(), Reply: t.EffectiveReply()}
	} else {
		var answerable bool
		if ident, answerable = identify(raw.Data, raw.Header, raw.Subject, raw.Sequence); !answerable {
			w.deadLetter(raw.Data, raw.Header, "max_deliveries", ident.Batch, ident.Attempt, ident.ID, adv.StreamSeq, why)
			return
		}
		res = &messages.Result{V: messages.Version, TaskID: ident.ID, Batch: ident.Batch, Attempt: ident.Attempt}
	}
	res.V, res.Delivery, res.Host, res.ExitCode = messages.Version, int(adv.Deliveries), w.cfg.HostID, -1
	res.Status = messages.StatusInfraError
	res.Error = &messages.Error{Code: messages.CodeMaxDeliveries, Msg: why}
	res.FinishedAt = time.Now().UTC()
	w.deadLetter(raw.Data, raw.Header, "max_deliveries", res.Batch, res.Attempt, res.TaskID, adv.StreamSeq, why)
	// The worker that had the last delivery died without a word: speak for
	// it as the next delivery, so a client waiting for events hears the end.
	em := w.newEmitterTo(ident, int(adv.Deliveries)+1)
	if err := w.conclude(em, res, raw.Subject); err != nil {
		w.log.Error().Err(err).Msg("max deliveries: could not store result")
	}
}
