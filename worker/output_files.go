package worker

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox/files"
)

// outputCollector keeps a task's output files (Task.Outputs). The sandbox
// calls collect (Spec.Finished) once the task's tree has ended and before
// its home is torn down; it reads the matches through sandbox/files, which
// follows no symlink and opens only regular files with one link, into
// memory within the limits of messages.MaxOutput*. store puts them in the
// outputs object store afterwards.
type outputCollector struct {
	patterns []string
	files    []collectedFile
	refused  []messages.RefusedFile
	seen     map[string]bool
	total    int64
}

type collectedFile struct {
	path string
	data []byte
}

func newOutputCollector(patterns []string) *outputCollector {
	if len(patterns) == 0 {
		return nil
	}
	return &outputCollector{patterns: patterns, seen: map[string]bool{}}
}

// collectTimeout bounds reading a task's output files.
const collectTimeout = 30 * time.Second

// collect reads the files matching the patterns under home ("" when the
// home is not reachable from the host).
func (c *outputCollector) collect(home string) {
	if home == "" {
		c.refuse("*", "the home was not reachable from the host (an unprivileged worker's disk quota keeps it in the sandbox's namespace)")
		return
	}
	h, err := files.Open(home, files.NoOwner)
	if err != nil {
		c.refuse("*", err.Error())
		return
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	for _, p := range c.patterns {
		c.expand(ctx, h, "", strings.Split(p, "/"))
	}
}

// expand matches the pattern components comps below dir.
func (c *outputCollector) expand(ctx context.Context, h *files.Home, dir string, comps []string) {
	comp, rest := comps[0], comps[1:]
	var names []files.Entry
	if !hasMeta(comp) {
		e, err := h.Stat(ctx, path.Join(dir, comp))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.refuse(path.Join(dir, comp), reasonOf(err))
			}
			return
		}
		names = []files.Entry{e}
	} else {
		ents, err := h.List(ctx, cmp.Or(dir, "."))
		if err != nil {
			return // not a directory, or gone: nothing matches
		}
		for _, e := range ents {
			if ok, _ := path.Match(comp, e.Name); ok {
				names = append(names, e)
			}
		}
	}
	for _, e := range names {
		p := path.Join(dir, e.Name)
		switch {
		case len(rest) > 0 && e.Type == files.TypeDir:
			c.expand(ctx, h, p, rest)
		case len(rest) > 0 && e.Type == files.TypeSymlink:
			c.refuse(p, "symlink") // never walked through
		case len(rest) > 0:
		case e.Type == files.TypeFile:
			c.take(ctx, h, p, e.Size)
		case e.Type == files.TypeSymlink:
			c.refuse(p, "symlink")
		case e.Type == files.TypeOther:
			c.refuse(p, "not a regular file")
		}
	}
}

func (c *outputCollector) take(ctx context.Context, h *files.Home, p string, size int64) {
	switch {
	case c.seen[p]:
		return
	case len(c.files) >= messages.MaxOutputFiles:
		c.refuse(p, fmt.Sprintf("more than %d output files", messages.MaxOutputFiles))
		return
	case size > messages.MaxOutputFileBytes:
		c.refuse(p, fmt.Sprintf("%d bytes, over the %d per file", size, messages.MaxOutputFileBytes))
		return
	case c.total+size > messages.MaxOutputTotalBytes:
		c.refuse(p, fmt.Sprintf("the output files would exceed %d bytes in all", messages.MaxOutputTotalBytes))
		return
	}
	// One byte more than allowed: a file that grew since the stat is refused.
	data, err := h.Read(ctx, p, 0, messages.MaxOutputFileBytes+1)
	switch {
	case err != nil:
		c.refuse(p, reasonOf(err))
	case len(data) > messages.MaxOutputFileBytes || c.total+int64(len(data)) > messages.MaxOutputTotalBytes:
		c.refuse(p, "grew past the limits while being read")
	default:
		c.seen[p] = true
		c.total += int64(len(data))
		c.files = append(c.files, collectedFile{path: p, data: data})
	}
}

// refuse lists p as refused, once however many patterns match it.
func (c *outputCollector) refuse(p, reason string) {
	if c.seen[p] {
		return
	}
	c.seen[p] = true
	c.refused = append(c.refused, messages.RefusedFile{Path: p, Reason: reason})
}

// store puts the collected files in the outputs object store and lists
// them in res; seq (the task's TASKS sequence) and the delivery make the
// names unique to this run.
func (c *outputCollector) store(w *Worker, res *messages.Result, seq uint64) error {
	for i, f := range c.files {
		sum := sha256.Sum256(f.data)
		name := messages.OutputFileObjectName(res.Batch, res.Attempt, res.TaskID, seq, res.Delivery, i)
		if err := w.putOutput(res.Batch, name, f.data); err != nil {
			return err
		}
		res.Files = append(res.Files, messages.OutputFile{Path: f.path, Size: int64(len(f.data)), SHA256: hex.EncodeToString(sum[:]), Object: name})
	}
	res.FilesRefused = c.refused
	return nil
}

func reasonOf(err error) string {
	switch {
	case errors.Is(err, files.ErrSymlink):
		return "symlink"
	case errors.Is(err, files.ErrNotRegular):
		return "not a regular file"
	case errors.Is(err, files.ErrHardLink):
		return "hard link"
	}
	return err.Error()
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }
