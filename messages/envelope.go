package messages

import (
	"encoding/json"
	"strconv"
	"strings"
)

// CheckEnvelope checks that what a delivered task message says outside its
// body agrees with the body: the subject warren.tasks.<pool>.<profile>.<batch>
// must name the body's batch, pool and profile, and the Warren-Task-Id,
// Warren-Batch and Warren-Attempt headers, when present, its id, batch and
// attempt. The body wins where they would disagree, so a disagreement is
// refused (CodeContradictory) rather than settled silently. header is a
// nats.Header; keys are matched exactly, as NATS does.
func CheckEnvelope(t *Task, subject string, header map[string][]string) error {
	// The batch is the rest: one token, or a tenant's two.
	parts := strings.SplitN(subject, ".", 5)
	if len(parts) != 5 || parts[0]+"."+parts[1] != SubjectTasksPrefix {
		return fieldErr(CodeInvalidField, "", "published on %q; publish tasks on %s.<pool>.<profile>.<batch>", subject, SubjectTasksPrefix)
	}
	for _, c := range []struct{ field, subj, body string }{
		{"pool", parts[2], t.EffectivePool()},
		{"profile", parts[3], t.EffectiveProfile()},
		{"batch", parts[4], t.Batch},
	} {
		if c.subj != c.body {
			return fieldErr(CodeContradictory, c.field, "the subject %s names %s %q but the body says %q; publish on %s",
				subject, c.field, c.subj, c.body, TaskSubject(t.EffectivePool(), t.EffectiveProfile(), t.Batch))
		}
	}
	for _, c := range []struct{ header, field, body string }{
		{HeaderTaskID, "id", t.ID},
		{HeaderBatch, "batch", t.Batch},
		{HeaderAttempt, "attempt", strconv.Itoa(t.EffectiveAttempt())},
	} {
		if v := header[c.header]; len(v) > 0 && v[0] != c.body {
			return fieldErr(CodeContradictory, c.field, "header %s is %q but the body says %q; set the header from the body or drop it",
				c.header, v[0], c.body)
		}
	}
	return nil
}

// TaskSubjectBatch is the batch a task subject names:
// warren.tasks.<pool>.<profile>.<batch>, the batch being the rest (one
// token, or a tenant's two). ok is false for any other subject.
func TaskSubjectBatch(subject string) (batch string, ok bool) {
	parts := strings.SplitN(subject, ".", 5)
	if len(parts) != 5 || parts[0]+"."+parts[1] != SubjectTasksPrefix || !ValidBatchID(parts[4]) {
		return "", false
	}
	return parts[4], true
}

// TaskIdentity names a task attempt and where its events go, as far as a
// body that may fail validation tells.
type TaskIdentity struct {
	ID, Batch string
	Attempt   int
	// Reply is the body's reply subject when it passes validation,
	// otherwise the default event subject of ID and Batch.
	Reply string
}

// PeekTask reads a task's identity from a body that may not decode or
// validate as a whole, so a refusal can be filed under the task's own id
// and attempt and announced where its client listens. ok is false unless
// the body is a JSON object with a valid id and batch and a non-negative
// attempt.
func PeekTask(data []byte) (ident TaskIdentity, ok bool) {
	var p struct {
		ID      string `json:"id"`
		Batch   string `json:"batch"`
		Attempt int    `json:"attempt"`
		Reply   string `json:"reply"`
	}
	// Type errors in other fields still leave these decoded; a syntax
	// error leaves them empty, which the checks below refuse.
	_ = json.Unmarshal(data, &p)
	if !ValidID(p.ID) || !ValidBatchID(p.Batch) || p.Attempt < 0 {
		return TaskIdentity{}, false
	}
	// The reply is checked by the same rules as a whole task's, on a task
	// that is otherwise valid.
	probe := Task{V: Version, ID: p.ID, Batch: p.Batch, Attempt: p.Attempt, Kind: KindExec, Argv: []string{"true"}, Reply: p.Reply}
	if probe.Validate() != nil {
		probe.Reply = ""
	}
	return TaskIdentity{ID: p.ID, Batch: p.Batch, Attempt: probe.EffectiveAttempt(), Reply: probe.EffectiveReply()}, true
}
