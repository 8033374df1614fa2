package worker

import (
	"encoding/json"

	"github.com/warrenhq/warren/messages"
)

// checkReply applies the reply rule to a decoded task: its events go to its
// own batch's events or to an allowed inbox prefix, nowhere else. A task
// that breaks it is refused like any invalid task.
func (w *Worker) checkReply(t *messages.Task) error {
	return messages.CheckReply(t, w.cfg.InboxPrefixes)
}

// replySubject is where the events of the task named by ident go: its
// reply when the rule allows it, else its default event subject. Defense in
// depth: even a task that slipped past checkReply cannot aim the worker's
// publisher elsewhere.
func (w *Worker) replySubject(ident messages.TaskIdentity) string {
	probe := messages.Task{ID: ident.ID, Batch: ident.Batch, Reply: ident.Reply}
	if ident.Reply == "" || messages.CheckReply(&probe, w.cfg.InboxPrefixes) != nil {
		return messages.EventSubject(ident.Batch, ident.ID)
	}
	return ident.Reply
}

// newEmitter makes the event publisher of one delivery of t.
func (w *Worker) newEmitter(t *messages.Task, delivery int) *emitter {
	return w.newEmitterTo(messages.TaskIdentity{ID: t.ID, Batch: t.Batch, Attempt: t.EffectiveAttempt(), Reply: t.Reply}, delivery)
}

// newEmitterTo is newEmitter for a task known only by its identity (a body
// that does not decode or validate).
func (w *Worker) newEmitterTo(ident messages.TaskIdentity, delivery int) *emitter {
	return &emitter{
		nc:      w.nc,
		subject: w.replySubject(ident),
		base: messages.Event{
			V: messages.Version, TaskID: ident.ID, Batch: ident.Batch,
			Attempt: ident.Attempt, Delivery: delivery, Host: w.cfg.HostID,
		},
		log: w.log,
	}
}

// redactRefused is the payload a refused task is dead-lettered with: as
// received, except that a task refused for carrying cleartext secrets has
// their values removed, and its message is erased from its task stream (best effort:
// the credentials may not allow it), so the worker makes no further copy.
func (w *Worker) redactRefused(data []byte, merr *messages.Error, stream string, seq uint64) []byte {
	if merr.Code != messages.CodeCleartextSecrets {
		return data
	}
	w.eraseTask(stream, seq)
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	if secrets, ok := doc["secrets"].(map[string]any); ok {
		for k := range secrets {
			secrets[k] = maskText
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	return out
}
