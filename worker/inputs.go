package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// withInputs returns t with its input objects (stdin_object,
// files_objects) fetched from its namespace's inputs store and put
// inline, each checked against the size and sha256 the task gives before
// the run; t itself is not modified. An object missing or not matching is
// the task's failure (an *messages.Error with CodeInputUnavailable, never
// retried); any other error is the broker's, for a retry.
func (w *Worker) withInputs(ctx context.Context, t *messages.Task) (*messages.Task, *messages.Error, error) {
	if t.StdinObject == nil && len(t.FilesObjects) == 0 {
		return t, nil, nil
	}
	bucket := messages.NamespaceOf(t.Batch).Inputs()
	obs, err := w.js.ObjectStore(ctx, bucket)
	if err != nil {
		return nil, nil, fmt.Errorf("worker: open inputs object store %s: %w", bucket, err)
	}
	run := *t
	if t.StdinObject != nil {
		data, bad, err := fetchInput(ctx, obs, "stdin_object", *t.StdinObject)
		if bad != nil || err != nil {
			return nil, bad, err
		}
		run.Stdin, run.StdinObject = data, nil
	}
	run.Files = maps.Clone(t.Files)
	if run.Files == nil {
		run.Files = map[string]messages.Bytes{}
	}
	for p, o := range t.FilesObjects {
		data, bad, err := fetchInput(ctx, obs, "files_objects."+p, o)
		if bad != nil || err != nil {
			return nil, bad, err
		}
		run.Files[p] = data
	}
	run.FilesObjects = nil
	return &run, nil, nil
}

// fetchInput reads object o in full and checks it; field names it in a
// refusal.
func fetchInput(ctx context.Context, obs jetstream.ObjectStore, field string, o messages.InputObject) ([]byte, *messages.Error, error) {
	unavailable := func(format string, args ...any) ([]byte, *messages.Error, error) {
		return nil, &messages.Error{Code: messages.CodeInputUnavailable, Field: field, Msg: fmt.Sprintf(format, args...)}, nil
	}
	r, err := obs.Get(ctx, o.Name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return unavailable("input object %s is not in the inputs store (expired, or never stored); submit the batch again", o.Name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("worker: read input object %s: %w", o.Name, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, o.Size+1))
	if err != nil {
		return nil, nil, fmt.Errorf("worker: read input object %s: %w", o.Name, err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != o.Size || hex.EncodeToString(sum[:]) != o.SHA256 {
		return unavailable("input object %s holds %d bytes with sha256 %x, the task names %d bytes with sha256 %s", o.Name, len(data), sum, o.Size, o.SHA256)
	}
	return data, nil, nil
}
