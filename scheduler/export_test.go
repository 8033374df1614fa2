package scheduler

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// HostsListed is the registry read key by key, the fallback of Hosts.
func (c *Client) HostsListed(ctx context.Context) ([]messages.HostInfo, error) {
	return c.hostsListed(ctx)
}

// CreateManifest and UpdateManifestFrom are the publication's manifest
// writes.
func (c *Client) CreateManifest(ctx context.Context, batch string, fn func(*messages.BatchManifest) error) (*messages.BatchManifest, uint64, error) {
	return c.createManifest(ctx, batch, fn)
}

func (c *Client) UpdateManifestFrom(ctx context.Context, batch string, known *messages.BatchManifest, rev uint64, fn func(*messages.BatchManifest) error) (uint64, error) {
	_, stored, err := c.updateManifestFrom(ctx, batch, known, rev, fn)
	return stored, err
}

// SetAfterRoomCheck runs fn between a publication's room check and its
// first task.
func (c *Client) SetAfterRoomCheck(fn func()) { c.afterRoomCheck = fn }

// RoomNeed is the bytes the task stream counts for b's tasks once stored.
func RoomNeed(b *Batch) int64 {
	var n int64
	for i := range b.Tasks {
		n += storedSize(taskMsg(&b.Tasks[i], b.payloads[i]))
	}
	return n
}

// SetIDChunking makes ids over inline bytes go into chunks of chunk bytes
// for the test's duration.
func SetIDChunking(t interface{ Cleanup(func()) }, inline, chunk int) {
	oldInline, oldChunk := idInlineBytes, idChunkBytes
	idInlineBytes, idChunkBytes = inline, chunk
	t.Cleanup(func() { idInlineBytes, idChunkBytes = oldInline, oldChunk })
}

// SplitIDs is splitIDs.
func SplitIDs(ids []string) [][]string { return splitIDs(ids) }

// SkewResults sets the wait after which a collection checks whether its
// results consumer stalled, and changes the config of the n-th consumer
// of every collection (from 0) with skew.
func (c *Client) SkewResults(stall time.Duration, skew func(n int, cfg *jetstream.OrderedConsumerConfig)) {
	c.resultStall, c.skewResults = stall, skew
}

// Retry runs fn as the client retries an operation on the broker.
func Retry[T any](ctx context.Context, c *Client, what string, fn func() (T, error)) (T, error) {
	return retry(ctx, c, what, fn)
}
