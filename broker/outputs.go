package broker

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/warrenhq/warren/messages"
)

// LoadOutputs fills a result's Stdout and Stderr from the outputs object
// store of its batch's namespace (messages.Namespace.Outputs) when the
// result names objects instead of holding the bytes (output too large for
// one message), and clears the names. A result with its output inline is
// left as it is.
func LoadOutputs(ctx context.Context, js jetstream.JetStream, r *messages.Result) error {
	if r.StdoutObject == "" && r.StderrObject == "" {
		return nil
	}
	bucket := messages.NamespaceOf(r.Batch).Outputs()
	obs, err := js.ObjectStore(ctx, bucket)
	if err != nil {
		return fmt.Errorf("open object store %s: %w", bucket, err)
	}
	for _, f := range []struct {
		name *string
		into *messages.Bytes
	}{{&r.StdoutObject, &r.Stdout}, {&r.StderrObject, &r.Stderr}} {
		if *f.name == "" {
			continue
		}
		b, err := obs.GetBytes(ctx, *f.name)
		if err != nil {
			return fmt.Errorf("read output %s of task %s: %w", *f.name, r.TaskID, err)
		}
		*f.into, *f.name = b, ""
	}
	return nil
}
