package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// openSecrets opens t's sealed secrets with the pool's seal key and returns
// the task to run (secrets added to its env) and the mask for its output.
// Without sealed secrets it returns t itself and a nil mask.
func (w *Worker) openSecrets(t *messages.Task) (*messages.Task, *secretMask, error) {
	secrets, err := messages.OpenSecrets(t, w.cfg.SealKey)
	if err != nil || len(secrets) == 0 {
		return t, nil, err
	}
	run := *t
	run.Env = messages.WithSecrets(t.Env, secrets)
	run.SealedSecrets = nil
	return &run, newSecretMask(secrets), nil
}

// refuseSecrets ends a task whose secrets cannot be opened, without
// retrying: a worker without the pool's key (secrets_unavailable) stores an
// infra_error result and dead-letters the task under reason "secrets"; a
// damaged or moved box is an invalid task.
func (w *Worker) refuseSecrets(msg jetstream.Msg, meta *jetstream.MsgMetadata, t *messages.Task, delivery int, em *emitter, err error) {
	var merr *messages.Error
	if !errors.As(err, &merr) || !errors.Is(err, messages.ErrSecretsUnavailable) {
		w.refuse(msg, meta, err)
		return
	}
	w.log.Error().Str("batch", t.Batch).Str("task_id", t.ID).Str("reason", merr.Msg).Msg("cannot open the task's secrets")
	res := w.baseResult(t, delivery)
	res.Status, res.Error, res.FinishedAt = messages.StatusInfraError, merr, time.Now().UTC()
	w.deadLetter(msg.Data(), msg.Headers(), "secrets", t.Batch, t.EffectiveAttempt(), t.ID, meta.Sequence.Stream, merr.Error())
	// Stored, then the error and the final exit event.
	if serr := w.conclude(em, res, msg.Subject()); serr != nil {
		w.log.Error().Err(serr).Msg("could not store the secrets_unavailable result; redelivering")
		_ = msg.Nak()
		return
	}
	_ = msg.TermWithReason("secrets unavailable: " + merr.Msg)
	w.done.Add(1)
}

// eraseTask removes a task message from its task stream (best effort).
func (w *Worker) eraseTask(stream string, seq uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := w.js.Stream(ctx, stream)
	if err == nil {
		err = s.SecureDeleteMsg(ctx, seq)
	}
	if err != nil {
		w.log.Warn().Err(err).Uint64("stream_seq", seq).Msg(fmt.Sprintf("could not erase a task with cleartext secrets from %s; an operator should delete it", stream))
	}
}
