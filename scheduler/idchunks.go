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

// Where an attempt's task ids go. Ids whose encoded list is at most
// idInlineBytes are in the manifest itself; more are split into chunks of
// at most idChunkBytes, each its own entry of the manifest's bucket
// (messages.IDChunk), so a manifest stays small whatever the batch's size
// and however many attempts it has. Variables, not constants, for tests.
var (
	idInlineBytes = 16 << 10
	idChunkBytes  = 256 << 10
)

// splitIDs chunks ids for the manifest: nil when they fit inline, else
// consecutive runs of at most idChunkBytes encoded each.
func splitIDs(ids []string) [][]string {
	total := 0
	for _, id := range ids {
		total += len(id) + 3 // quotes and a comma
	}
	if total <= idInlineBytes {
		return nil
	}
	var chunks [][]string
	start, size := 0, 0
	for i, id := range ids {
		if n := len(id) + 3; size+n > idChunkBytes && i > start {
			chunks = append(chunks, ids[start:i])
			start, size = i, 0
		}
		size += len(id) + 3
	}
	return append(chunks, ids[start:])
}

// setIDs records ids in the attempt a: inline, or written as chunks of
// batch's bucket under a.Digest (before the manifest that points to them
// is written, so a reader never finds a manifest without its ids).
// Writing them again (a resumed publication, a replay of the same tasks)
// writes the same values.
func (c *Client) setIDs(ctx context.Context, batch string, a *messages.AttemptManifest, ids []string) error {
	chunks := splitIDs(ids)
	if chunks == nil {
		a.IDs = ids
		return nil
	}
	bucket := messages.NamespaceOf(batch).Batches()
	for n, part := range chunks {
		data, err := json.Marshal(messages.IDChunk{V: messages.Version, IDs: part})
		if err != nil {
			return err
		}
		key := messages.IDChunkKey(batch, a.Digest, n)
		if _, err := retry(ctx, c, "write task ids", func() (uint64, error) { return c.putKV(ctx, bucket, key, data, nil) }); err != nil {
			return fmt.Errorf("scheduler: write task ids %s: %w", key, err)
		}
	}
	a.IDChunks = len(chunks)
	return nil
}

// errIDsGone: a chunk of an attempt's ids is not in the bucket (expired
// before its manifest, or removed).
var errIDsGone = errors.New("a part of the attempt's task ids is gone")

// attemptIDs are the task ids of attempt a of batch: the manifest's own
// list or its chunks, in publication order; nil for a manifest without
// ids (written by an older scheduler). A chunk missing is errIDsGone.
func (c *Client) attemptIDs(ctx context.Context, batch string, a messages.AttemptManifest) ([]string, error) {
	if a.IDChunks == 0 {
		return a.IDs, nil
	}
	kv, err := c.bucket(ctx, messages.NamespaceOf(batch).Batches())
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, a.Total)
	for n := range a.IDChunks {
		key := messages.IDChunkKey(batch, a.Digest, n)
		e, err := retry(ctx, c, "read task ids", func() (jetstream.KeyValueEntry, error) { return kv.Get(ctx, key) })
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("scheduler: %w: %s", errIDsGone, key)
		}
		if err != nil {
			return nil, fmt.Errorf("scheduler: read task ids %s: %w", key, err)
		}
		chunk, err := messages.DecodeIDChunk(e.Value())
		if err != nil {
			return nil, fmt.Errorf("scheduler: task ids %s: %w", key, err)
		}
		ids = append(ids, chunk.IDs...)
	}
	if len(ids) != a.Total {
		return nil, fmt.Errorf("scheduler: the %d id chunks of batch %s hold %d ids, its manifest says %d tasks", a.IDChunks, batch, len(ids), a.Total)
	}
	return ids, nil
}

// dropIDs removes the id chunks setIDs wrote for an attempt that was
// never published (refused before its first task, or a conflicting task
// set). Unchecked, as dropAttemptOne: what is left expires with the
// bucket's TTL.
func (c *Client) dropIDs(ctx context.Context, batch string, a messages.AttemptManifest) {
	if a.IDChunks == 0 {
		return
	}
	kv, err := c.bucket(ctx, messages.NamespaceOf(batch).Batches())
	for n := 0; err == nil && n < a.IDChunks; n++ {
		err = kv.Purge(ctx, messages.IDChunkKey(batch, a.Digest, n))
	}
	if err != nil {
		c.log.Debug().Err(err).Str("batch", batch).Msg("could not remove the task ids of a batch never published")
	}
}

// kvSubject is the subject a put of key in bucket is published to: the
// handle's for a bucket that is not a mirror (Warren's never are),
// $KV.<bucket>.<key>, behind the API prefix when it is not the default
// (a tenant's).
func (c *Client) kvSubject(bucket, key string) string {
	subject := "$KV." + bucket + "." + key
	if p := c.js.Options().APIPrefix; p != "" {
		if len(p) > 0 && p[len(p)-1] != '.' {
			p += "." // as the handle's prefix is normalised
		}
		if p != jetstream.DefaultAPIPrefix {
			subject = p + subject
		}
	}
	return subject
}

// putKV publishes a KV entry without the bucket's handle (see
// putManifest), with opts (a compare-and-set).
func (c *Client) putKV(ctx context.Context, bucket, key string, data []byte, opts []jetstream.PublishOpt) (uint64, error) {
	ack, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: c.kvSubject(bucket, key), Data: data}, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}
