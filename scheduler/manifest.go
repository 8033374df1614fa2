package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// Manifest returns a batch's manifest: the number of tasks of each attempt.
// It returns an error matching ErrUnknownBatch when there is none.
func (c *Client) Manifest(ctx context.Context, batch string) (*messages.BatchManifest, error) {
	kv, err := c.bucket(ctx, messages.NamespaceOf(batch).Batches())
	if err != nil {
		return nil, err
	}
	m, _, err := c.getManifest(ctx, kv, batch)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%w %q: no manifest in bucket %s", ErrUnknownBatch, batch, messages.NamespaceOf(batch).Batches())
	}
	return m, nil
}

// getManifest returns the manifest and its revision; nil and 0 when absent.
func (c *Client) getManifest(ctx context.Context, kv jetstream.KeyValue, batch string) (*messages.BatchManifest, uint64, error) {
	e, err := retry(ctx, c, "read manifest", func() (jetstream.KeyValueEntry, error) { return kv.Get(ctx, batch) })
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("scheduler: read manifest of %s: %w", batch, err)
	}
	var m messages.BatchManifest
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return nil, 0, fmt.Errorf("scheduler: manifest of %s is not valid JSON: %w", batch, err)
	}
	return &m, e.Revision(), nil
}

// createManifest is updateManifest for a batch that is most likely new
// (a publication): it first tries to create the manifest fn makes of a
// fresh one, without reading it first, and only when one exists reads and
// updates it. It returns the manifest stored and its revision.
func (c *Client) createManifest(ctx context.Context, batch string, fn func(m *messages.BatchManifest) error) (*messages.BatchManifest, uint64, error) {
	m := &messages.BatchManifest{V: messages.Version, Batch: batch}
	return c.updateManifestFrom(ctx, batch, m, 0, fn)
}

// updateManifest applies fn to the batch's manifest (a fresh one when absent)
// and stores it with compare-and-set, retrying when another client changed
// it in between: concurrent replays of one batch each get their own attempt.
func (c *Client) updateManifest(ctx context.Context, batch string, fn func(m *messages.BatchManifest) error) (*messages.BatchManifest, error) {
	m, _, err := c.updateManifestFrom(ctx, batch, nil, 0, fn)
	return m, err
}

// updateManifestFrom is updateManifest starting from known, the manifest
// believed to be stored at revision rev (0: absent), without reading it
// first; a manifest changed since is read and fn applied to it again.
// known == nil reads first. It returns the manifest stored and its
// revision.
func (c *Client) updateManifestFrom(ctx context.Context, batch string, known *messages.BatchManifest, rev uint64, fn func(m *messages.BatchManifest) error) (*messages.BatchManifest, uint64, error) {
	for {
		m := known
		known = nil
		// write is the compare-and-set: from rev without the bucket's handle
		// (putManifest), or, when a read found no manifest, the handle's
		// Create, which also writes over a delete or purge marker (a
		// manifest removed: dropAttemptOne, `nats kv del`) that a create
		// from revision 0 would fail on forever.
		write := func(data []byte) (uint64, error) { return c.putManifest(ctx, batch, data, rev) }
		if m == nil {
			// Reading needs the bucket's handle (looked up once); a write
			// from a known revision does not (putManifest).
			kv, err := c.bucket(ctx, messages.NamespaceOf(batch).Batches())
			if err != nil {
				return nil, 0, err
			}
			if m, rev, err = c.getManifest(ctx, kv, batch); err != nil {
				return nil, 0, err
			}
			if m == nil {
				m = &messages.BatchManifest{V: messages.Version, Batch: batch}
				write = func(data []byte) (uint64, error) { return kv.Create(ctx, batch, data) }
			}
		}
		if err := fn(m); err != nil {
			return nil, 0, err
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil, 0, err
		}
		stored, err := retry(ctx, c, "write manifest", func() (uint64, error) { return write(data) })
		switch {
		case err == nil:
			return m, stored, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			continue // lost the race (or a guess was wrong): re-read and re-apply
		default:
			return nil, 0, fmt.Errorf("scheduler: write manifest of %s: %w", batch, err)
		}
	}
}

// putManifest stores a manifest with compare-and-set on rev (0: the key
// must not exist), as the bucket's Create and Update do, but without its
// handle: looking the bucket up is a JetStream API request (and its
// stream info decoded) on the path of every publication, for nothing a
// write needs (the subject: kvSubject). A compare that fails says
// ErrKeyExists (create) or ErrKeyRevisionMismatch (update), as the
// handle's do; no stream answering is looked into through the handle, so
// a broker never set up says so.
func (c *Client) putManifest(ctx context.Context, batch string, data []byte, rev uint64) (uint64, error) {
	seq, err := c.putKV(ctx, messages.NamespaceOf(batch).Batches(), batch, data, []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(rev)})
	switch {
	case err == nil:
		return seq, nil
	case isWrongLastSeq(err) && rev == 0:
		return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyExists)
	case isWrongLastSeq(err):
		return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse):
		if _, berr := c.bucket(ctx, messages.NamespaceOf(batch).Batches()); berr != nil {
			return 0, berr // not set up: the lookup's error says so
		}
	}
	return 0, err
}

// isWrongLastSeq reports a compare-and-set refused by the stream.
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
