package scheduler

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/warrenhq/warren/messages"
)

// BatchOptions control how tasks become a Batch.
type BatchOptions struct {
	// Batch is the batch id given to tasks that carry none; a task naming a
	// different batch is refused. Defaults to the batch the tasks name, or,
	// when none does, to "b-" and 16 hex digits of the tasks' digest, so
	// submitting the same input again names the same batch (and therefore
	// queues nothing twice).
	Batch string
	// MaxErrors caps the problems a *BatchError's message lists; every
	// problem is kept in BatchError.Errors. Defaults to 20.
	MaxErrors int
	// InboxPrefixes are the inbox prefixes a task's reply may use besides
	// its own batch's events (messages.CheckReply); keep them the same as
	// the workers' list. Defaults to messages.DefaultInboxPrefixes.
	InboxPrefixes []string
	// Tenant, on an authenticated broker, qualifies the batch id as
	// "<tenant>.<batch>" (messages.QualifyBatch): the server accepts a
	// tenant's tasks only under its own name. Defaults to "" (no tenant).
	Tenant string
	// NoCache sets verify.no_cache on every verify task (checked afresh,
	// never answered from the verdict cache) before ids and the digest are
	// derived: the same proofs submitted with and without it are two
	// batches. Defaults to false (each task's own field decides).
	NoCache bool
}

// Batch is a validated set of tasks, ready to publish as attempt 1.
type Batch struct {
	ID     string
	Tasks  []messages.Task
	Digest string // sha256 of the tasks without batch and attempt; see messages.AttemptManifest
	// payloads are the encoded tasks, in order (nil for a task with
	// secrets until Publish seals it); lines their input lines.
	payloads [][]byte
	lines    []int
	show     int // BatchOptions.MaxErrors, for errors found at publish time
	// inputs are the contents the tasks reference as input objects, by
	// object name, stored by Publish before the first task.
	inputs map[string][]byte
}

// NewBatch validates tasks and fills defaults, refusing the whole batch with
// a *BatchError (positions are 1-based) when any task is invalid:
//
//   - v: 0 becomes messages.Version;
//   - attempt: 0 becomes 1; anything but 0 or 1 is refused (replay makes
//     later attempts);
//   - id: an empty id becomes the task's 1-based position (its line number
//     in a JSONL file), so ids are stable across re-submissions;
//   - batch: see BatchOptions.Batch. All tasks share one batch;
//   - ids must be unique within the batch;
//   - an exec task whose encoding is over 256 KiB has its largest stdin
//     and files moved, one at a time until it is not, to input objects
//     (stdin_object, files_objects: name, size, sha256) whose content
//     Publish stores in the batch's inputs object store before the first
//     task; the worker fetches and checks them before the run.
//
// The tasks are copied; the caller's slice is not modified.
func NewBatch(tasks []messages.Task, opts BatchOptions) (*Batch, error) {
	lines := make([]int, len(tasks))
	for i := range lines {
		lines[i] = i + 1
	}
	return newBatch(append([]messages.Task(nil), tasks...), lines, nil, opts)
}

// newBatch finishes a batch whose tasks were decoded from lines; prior holds
// problems found while decoding (their tasks are absent from tasks).
func newBatch(tasks []messages.Task, lines []int, prior []*LineError, opts BatchOptions) (*Batch, error) {
	opts.MaxErrors = cmp.Or(opts.MaxErrors, 20)
	if len(opts.InboxPrefixes) == 0 {
		opts.InboxPrefixes = messages.DefaultInboxPrefixes
	}
	for _, p := range opts.InboxPrefixes {
		if err := messages.CheckInboxPrefix(p); err != nil {
			return nil, fmt.Errorf("scheduler: inbox prefixes: %w", err)
		}
	}
	problems := append([]*LineError(nil), prior...)
	inputs := map[string][]byte{}
	add := func(le *LineError) { problems = append(problems, le) }
	batch, batchLine := opts.Batch, 0
	for i := range tasks {
		t := &tasks[i]
		if t.V == 0 {
			t.V = messages.Version
		}
		if opts.NoCache && t.Verify != nil {
			v := *t.Verify // the caller's spec is not modified
			v.NoCache = true
			t.Verify = &v
		}
		if err := externalize(t, inputs); err != nil {
			add(&LineError{lines[i], err})
		}
		switch t.Attempt {
		case 0:
			t.Attempt = 1
		case 1:
		default:
			add(&LineError{lines[i], &messages.Error{Code: messages.CodeInvalidField, Field: "attempt",
				Msg: fmt.Sprintf("a submitted task is attempt 1, got %d; use replay to make a new attempt", t.Attempt)}})
		}
		if t.ID == "" {
			t.ID = strconv.Itoa(lines[i])
		}
		switch {
		case t.Batch == "":
		case batch == "":
			batch, batchLine = t.Batch, lines[i]
		case t.Batch != batch:
			where := "--batch"
			if batchLine > 0 {
				where = fmt.Sprintf("line %d", batchLine)
			}
			add(&LineError{lines[i], &messages.Error{Code: messages.CodeContradictory, Field: "batch",
				Msg: fmt.Sprintf("batch %q differs from %q set by %s; a submission is one batch", t.Batch, batch, where)}})
		}
	}
	if len(tasks) == 0 && len(problems) == 0 {
		return nil, ErrEmptyBatch
	}
	digest := digestTasks(tasks)
	if batch == "" {
		batch = "b-" + digest[:16]
	}
	batch = messages.QualifyBatch(opts.Tenant, batch)
	if err := checkBatchID(batch); err != nil {
		// Report a bad batch id once, where it was set, not on every task.
		if batchLine == 0 {
			return nil, fmt.Errorf("scheduler: batch id: %w", err)
		}
		add(&LineError{batchLine, err})
		return nil, newBatchError(problems, opts.MaxErrors)
	}
	b := &Batch{ID: batch, Tasks: tasks, Digest: digest, payloads: make([][]byte, len(tasks)), lines: lines, show: opts.MaxErrors, inputs: inputs}
	seen := make(map[string]int, len(tasks))
	for i := range tasks {
		t := &tasks[i]
		t.Batch = batch
		if err := t.Validate(); err != nil {
			add(&LineError{lines[i], err})
			continue
		}
		if err := messages.CheckReply(t, opts.InboxPrefixes); err != nil {
			add(&LineError{lines[i], err})
			continue
		}
		if first, dup := seen[t.ID]; dup {
			add(&LineError{lines[i], &messages.Error{Code: messages.CodeContradictory, Field: "id",
				Msg: fmt.Sprintf("id %q is also used on line %d; ids are unique within a batch", t.ID, first)}})
			continue
		}
		seen[t.ID] = lines[i]
		if len(t.Secrets) > 0 {
			continue // encoded once sealed, by Publish
		}
		data, err := encodeTask(t)
		if err != nil {
			add(&LineError{lines[i], err})
			continue
		}
		b.payloads[i] = data
	}
	if be := newBatchError(problems, opts.MaxErrors); be != nil {
		return nil, be
	}
	return b, nil
}

// encodeTask encodes a task for the wire, refusing one that is too large.
func encodeTask(t *messages.Task) ([]byte, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if len(data) > messages.MaxTaskBytes {
		return nil, &messages.Error{Code: messages.CodeTooLarge,
			Msg: fmt.Sprintf("task is %d bytes, at most %d", len(data), messages.MaxTaskBytes)}
	}
	return data, nil
}

// digestTasks hashes the tasks with batch and attempt cleared: the identity
// of a task set whatever batch id it is published under. Secret values are
// left out (only their names count): a digest of a secret would let anyone
// who reads the manifest test guesses of it.
func digestTasks(tasks []messages.Task) string {
	h := sha256.New()
	for _, t := range tasks {
		t.Batch, t.Attempt = "", 0
		if len(t.Secrets) > 0 {
			names := make(map[string]string, len(t.Secrets))
			for k := range t.Secrets {
				names[k] = ""
			}
			t.Secrets = names
		}
		data, _ := json.Marshal(&t) // a Task always marshals
		h.Write(data)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// decodeTaskLine decodes one JSONL line strictly (unknown fields are refused,
// so a typo is an error, not an ignored option). Validation happens later,
// once defaults are filled.
func decodeTaskLine(data []byte) (messages.Task, error) {
	var t messages.Task
	if len(data) > MaxLineBytes {
		return t, &messages.Error{Code: messages.CodeTooLarge,
			Msg: fmt.Sprintf("line is %d bytes, at most %d; split the task or its inputs", len(data), MaxLineBytes)}
	}
	if !utf8.Valid(data) {
		return t, &messages.Error{Code: messages.CodeInvalidUTF8, Field: messages.InvalidUTF8Field(data),
			Msg: `not valid UTF-8; give binary stdin or file content as {"base64": "..."}`}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return t, &messages.Error{Code: messages.CodeMalformed, Field: typeErr.Field,
				Msg: fmt.Sprintf("expected %s, got JSON %s", typeErr.Type, typeErr.Value)}
		}
		return t, &messages.Error{Code: messages.CodeMalformed, Msg: fmt.Sprintf("not a JSON task object: %v", err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return t, &messages.Error{Code: messages.CodeMalformed, Msg: "trailing data after the JSON object; one task per line"}
	}
	return t, nil
}
