package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/broker"
	"github.com/warrenhq/warren/messages"
)

// storeResult writes the single result of a task attempt, retrying through
// a broker outage for up to storeTimeout. A result already stored (by an
// earlier delivery) counts as stored: the broker keeps the first.
func (w *Worker) storeResult(res *messages.Result) error {
	w.fitPayload(res)
	data, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	subj := messages.ResultSubject(res.Batch, res.Attempt, res.TaskID)
	msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMsgID, "result."+messages.MsgID(res.Batch, res.TaskID, res.Attempt))
	deadline := time.Now().Add(storeTimeout)
	b := newBackoff(100*time.Millisecond, 2*time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = w.js.PublishMsg(ctx, msg)
		cancel()
		if err == nil || broker.IsResultExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("store result %s: %w", subj, err)
		}
		w.log.Warn().Err(err).Str("subject", subj).Msg("storing result failed; retrying")
		time.Sleep(b.next())
	}
}

// storeTimeout bounds how long a finished task waits for the broker.
const storeTimeout = 2 * time.Minute

// resultStored reports whether the attempt's result is already in RESULTS.
func (w *Worker) resultStored(t *messages.Task) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := w.results.GetLastMsgForSubject(ctx, messages.ResultSubject(t.Batch, t.EffectiveAttempt(), t.ID))
	return err == nil
}

// fitPayload trims captured output so the result fits the broker's max
// payload, marking what it cut.
func (w *Worker) fitPayload(res *messages.Result) {
	maxPayload := w.nc.MaxPayload() - 16<<10 // headers and JSON escaping slack
	size := int64(len(res.Stdout) + len(res.Stderr))
	if size <= maxPayload/2 { // JSON escaping can double the size
		return
	}
	each := max(maxPayload/4, 0)
	if int64(len(res.Stdout)) > each {
		res.Stdout, res.StdoutTruncated = res.Stdout[:each], true
	}
	if int64(len(res.Stderr)) > each {
		res.Stderr, res.StderrTruncated = res.Stderr[:each], true
	}
}

// deadLetter copies a task's payload to the DLQ with the reason, before the
// caller Terms it (Term would not delete it from the Limits-retention TASKS
// stream, but the DLQ is where operators look).
func (w *Worker) deadLetter(payload []byte, h nats.Header, reason, batch string, seq uint64, why string) {
	w.metrics.deadLettered(reason)
	if !messages.ValidID(batch) {
		batch = "unknown"
	}
	msg := &nats.Msg{Subject: messages.DLQSubject(reason, batch), Data: payload, Header: nats.Header{}}
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
	msg.Header.Set(messages.HeaderMsgID, "dlq."+strconv.FormatUint(seq, 10))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.js.PublishMsg(ctx, msg); err != nil {
		w.log.Error().Err(err).Uint64("stream_seq", seq).Msg("could not dead-letter task")
	}
}

// maxDeliveriesAdvisory is published by the server when a task reached
// MaxDeliver without an ack: the worker that had it died on its last try.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// watchMaxDeliveries turns max-deliveries advisories into a dead letter and
// an infra_error result, so a batch always completes. Workers share the
// subscription through a queue group: one handles each advisory.
func (w *Worker) watchMaxDeliveries() error {
	subj := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + messages.StreamTasks + ".*"
	sub, err := w.nc.QueueSubscribe(subj, "warren-dlq", func(m *nats.Msg) {
		var adv maxDeliveriesAdvisory
		if err := json.Unmarshal(m.Data, &adv); err != nil {
			return
		}
		w.bg.Add(1)
		go func() { defer w.bg.Done(); w.handleMaxDeliveries(adv) }()
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

func (w *Worker) handleMaxDeliveries(adv maxDeliveriesAdvisory) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := w.js.Stream(ctx, messages.StreamTasks)
	if err != nil {
		return
	}
	raw, err := stream.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		w.log.Error().Err(err).Uint64("stream_seq", adv.StreamSeq).Msg("max deliveries: task gone from the stream")
		return
	}
	why := fmt.Sprintf("no worker finished it in %d deliveries (workers died or timed out)", adv.Deliveries)
	t, derr := messages.DecodeTask(raw.Data)
	var res *messages.Result
	if derr != nil {
		id, batch, attempt := identifyRaw(raw)
		res = &messages.Result{V: messages.Version, TaskID: id, Batch: batch, Attempt: attempt}
	} else {
		res = w.baseResult(t, int(adv.Deliveries))
	}
	res.V, res.Delivery, res.Host, res.ExitCode = messages.Version, int(adv.Deliveries), w.cfg.HostID, -1
	res.Status = messages.StatusInfraError
	res.Error = &messages.Error{Code: messages.CodeMaxDeliveries, Msg: why}
	res.FinishedAt = time.Now().UTC()
	w.deadLetter(raw.Data, raw.Header, "max_deliveries", res.Batch, adv.StreamSeq, why)
	if err := w.storeResult(res); err != nil {
		w.log.Error().Err(err).Msg("max deliveries: could not store result")
	}
}

func identifyRaw(raw *jetstream.RawStreamMsg) (id, batch string, attempt int) {
	id, batch = raw.Header.Get(messages.HeaderTaskID), raw.Header.Get(messages.HeaderBatch)
	attempt, _ = strconv.Atoi(raw.Header.Get(messages.HeaderAttempt))
	if !messages.ValidID(id) {
		id = fmt.Sprintf("seq-%d", raw.Sequence)
	}
	if !messages.ValidID(batch) {
		batch = "unknown"
	}
	return id, batch, max(attempt, 1)
}
