package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/warrenhq/warren/messages"
)

// FetchFiles writes a result's output files (Result.Files) into
// dir/<task id>/<path>, each checked against its listed size and sha256.
// Paths are opened beneath dir (os.Root): a name that would leave it,
// through "..", an absolute path or a symlink already in dir, is refused
// and nothing is written for it.
func (c *Client) FetchFiles(ctx context.Context, r *messages.Result, dir string) error {
	if len(r.Files) == 0 {
		return nil
	}
	if !messages.ValidID(r.TaskID) {
		return fmt.Errorf("result of task %q: not a valid task id, its files are not written", r.TaskID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	bucket := messages.NamespaceOf(r.Batch).Outputs()
	obs, err := c.js.ObjectStore(ctx, bucket)
	if err != nil {
		return fmt.Errorf("open object store %s: %w", bucket, err)
	}
	for _, f := range r.Files {
		rel := filepath.Join(r.TaskID, filepath.FromSlash(f.Path))
		if !filepath.IsLocal(f.Path) || !filepath.IsLocal(rel) {
			return fmt.Errorf("task %s: output file %q would leave %s: refused", r.TaskID, f.Path, dir)
		}
		data, err := retry(ctx, c, "read output file", func() ([]byte, error) { return obs.GetBytes(ctx, f.Object) })
		if err != nil {
			return fmt.Errorf("task %s: read output file %s (%s): %w", r.TaskID, f.Path, f.Object, err)
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			return fmt.Errorf("task %s: output file %s does not match its listed size and sha256", r.TaskID, f.Path)
		}
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return fmt.Errorf("task %s: output file %s: %w", r.TaskID, f.Path, err)
		}
		if err := root.WriteFile(rel, data, 0o644); err != nil {
			return fmt.Errorf("task %s: output file %s: %w", r.TaskID, f.Path, err)
		}
	}
	return nil
}
