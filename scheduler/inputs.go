package scheduler

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// inputBudget is the largest encoded exec task that keeps all its stdin
// and files inline: a larger one has its largest contents moved to the
// batch's inputs object store, one at a time, until it is not (or none is
// left inline). Well under a stock server's 1 MiB max_payload, so a task
// of any input size publishes. A variable for tests.
var inputBudget = 256 << 10

// inputReuse is how recent an input object already stored with the same
// content must be for a publication to use it rather than put it again:
// the store's TTL counts from the put, and a task may wait that long.
const inputReuse = time.Hour

// inline is one stdin or file content of a task, with its encoded size.
type inline struct {
	path    string // "" for stdin
	content []byte
	size    int // encoded (messages.Bytes) size
}

// externalize moves t's largest inline inputs into input objects while
// its encoding is over inputBudget, adding their content to store by
// object name. Deterministic (by encoded size, then stdin first, then
// path), so the same task makes the same references, and the batch's
// digest, which hashes the references' sha256, names the same content.
func externalize(t *messages.Task, store map[string][]byte) error {
	if t.Kind != messages.KindExec || len(t.Stdin) == 0 && len(t.Files) == 0 {
		return nil
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	total := len(data)
	if total <= inputBudget {
		return nil
	}
	for _, in := range inlineInputs(t) {
		if total <= inputBudget {
			break
		}
		ref := messages.NewInputObject(in.content)
		refData, _ := json.Marshal(ref)
		if len(refData) >= in.size {
			continue // a reference is no smaller
		}
		total += len(refData) - in.size
		store[ref.Name] = in.content
		if in.path == "" {
			t.Stdin, t.StdinObject = nil, &ref
			continue
		}
		t.Files = maps.Clone(t.Files) // the caller's map is not modified
		delete(t.Files, in.path)
		if t.FilesObjects == nil {
			t.FilesObjects = map[string]messages.InputObject{}
		}
		t.FilesObjects[in.path] = ref
	}
	return nil
}

// inlineInputs lists t's stdin and files, largest first.
func inlineInputs(t *messages.Task) []inline {
	var all []inline
	add := func(path string, c []byte) {
		enc, _ := json.Marshal(messages.Bytes(c))
		all = append(all, inline{path: path, content: c, size: len(enc)})
	}
	if len(t.Stdin) > 0 {
		add("", t.Stdin)
	}
	for _, p := range slices.Sorted(maps.Keys(t.Files)) {
		add(p, t.Files[p])
	}
	slices.SortStableFunc(all, func(a, b inline) int { return cmp.Compare(b.size, a.size) })
	return all
}

// putInputs stores a batch's input objects in its namespace's inputs
// store, before its first task is published: content stored there lately
// (inputReuse) with the same digest is not sent again.
func (c *Client) putInputs(ctx context.Context, batch string, inputs map[string][]byte) error {
	if len(inputs) == 0 {
		return nil
	}
	bucket := messages.NamespaceOf(batch).Inputs()
	obs, err := lookup(ctx, c, "object store "+bucket, func() (jetstream.ObjectStore, error) { return c.js.ObjectStore(ctx, bucket) })
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		data := inputs[name]
		if info, err := obs.GetInfo(ctx, name); err == nil && sameContent(info, data) && time.Since(info.ModTime) < inputReuse {
			continue
		}
		if _, err := retry(ctx, c, "put input", func() (*jetstream.ObjectInfo, error) { return obs.PutBytes(ctx, name, data) }); err != nil {
			return fmt.Errorf("scheduler: store input %s (%d bytes) in %s: %w", name, len(data), bucket, err)
		}
	}
	return nil
}

// sameContent reports whether an object holds data, by size and digest.
func sameContent(info *jetstream.ObjectInfo, data []byte) bool {
	sum := sha256.Sum256(data)
	return !info.Deleted && info.Size == uint64(len(data)) && info.Digest == "SHA-256="+base64.URLEncoding.EncodeToString(sum[:])
}
