package messages

import (
	"fmt"
	"path"
	"strings"
)

// Limits of a task's output files (Task.Outputs).
const (
	// MaxOutputPatterns bounds the number of Task.Outputs entries.
	MaxOutputPatterns = 16
	// MaxOutputFiles bounds the files stored for one task; matches past
	// it are refused.
	MaxOutputFiles = 64
	// MaxOutputFileBytes bounds one stored file.
	MaxOutputFileBytes = 64 << 20
	// MaxOutputTotalBytes bounds the files stored for one task together.
	MaxOutputTotalBytes = 256 << 20
)

// OutputFile is one stored output file of a task.
type OutputFile struct {
	Path   string `json:"path"` // relative to the task's home
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
	Object string `json:"object"` // in bucket BucketOutputs
}

// RefusedFile is a match of Task.Outputs that was not stored.
type RefusedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"` // e.g. "symlink", "not a regular file", "over 64 MiB"
}

// OutputFileObjectName names the object holding output file number n of
// one delivery of a task attempt (see OutputObjectName).
func OutputFileObjectName(batch string, attempt int, id string, streamSeq uint64, delivery, n int) string {
	return fmt.Sprintf("%s.%d.%s.%d-%d.file%d", batch, attempt, id, streamSeq, delivery, n)
}

// validateOutputs checks Task.Outputs: relative, no "..", valid globs,
// bounded.
func (t *Task) validateOutputs() error {
	if len(t.Outputs) == 0 {
		return nil
	}
	if t.Kind != KindExec {
		return fieldErr(CodeContradictory, "outputs", "only exec tasks keep output files")
	}
	if len(t.Outputs) > MaxOutputPatterns {
		return fieldErr(CodeTooLarge, "outputs", "%d patterns, at most %d", len(t.Outputs), MaxOutputPatterns)
	}
	for i, p := range t.Outputs {
		field := fmt.Sprintf("outputs[%d]", i)
		switch {
		case p == "" || len(p) > 256:
			return fieldErr(CodeInvalidField, field, "must be 1-256 bytes")
		case strings.HasPrefix(p, "/"):
			return fieldErr(CodeInvalidField, field, "%q is absolute; name files relative to the task's home", p)
		}
		for _, c := range strings.Split(p, "/") {
			if c == ".." || c == "" || c == "." {
				return fieldErr(CodeInvalidField, field, "%q: empty, . and .. components are not allowed", p)
			}
			if _, err := path.Match(c, ""); err != nil {
				return fieldErr(CodeInvalidField, field, "%q is not a valid glob: %v", p, err)
			}
		}
	}
	return nil
}
