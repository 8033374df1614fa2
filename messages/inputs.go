package messages

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// BucketInputs is the object store of task inputs too large for a task
// message: a stdin or a file's content, put there by the submitter and
// named by the task (Task.StdinObject, Task.FilesObjects). Each
// namespace has its own (Namespace.Inputs): a tenant puts into its own,
// workers read.
const BucketInputs = "warren_inputs"

// MaxInputObjectBytes bounds one input object: a stdin or a file.
const MaxInputObjectBytes = 1 << 30

// maxInputNameBytes bounds an input object's name.
const maxInputNameBytes = 256

// InputObject names content in the batch's inputs object store
// (Namespace.Inputs) that the worker fetches, and checks against Size and
// SHA256, before the task runs. The task's digest covers SHA256, so a
// batch's identity is its inputs' content wherever it is stored.
type InputObject struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lowercase hex
}

// NewInputObject is the reference to content stored under its own
// digest's name (InputObjectName).
func NewInputObject(content []byte) InputObject {
	sum := sha256.Sum256(content)
	digest := hex.EncodeToString(sum[:])
	return InputObject{Name: InputObjectName(digest), Size: int64(len(content)), SHA256: digest}
}

// InputObjectName is the name the scheduler stores content of that
// sha256 under: the same content is stored once per namespace.
func InputObjectName(sha256Hex string) string { return "sha256-" + sha256Hex }

// validate checks the reference at field.
func (o InputObject) validate(field string) error {
	switch {
	case o.Name == "":
		return fieldErr(CodeMissingField, field+".name", "required")
	case len(o.Name) > maxInputNameBytes || !utf8.ValidString(o.Name) || strings.IndexByte(o.Name, 0) >= 0:
		return fieldErr(CodeInvalidField, field+".name", "must be 1-%d bytes of UTF-8 without NUL", maxInputNameBytes)
	case o.Size < 0 || o.Size > MaxInputObjectBytes:
		return fieldErr(CodeTooLarge, field+".size", "%d bytes, at most %d", o.Size, MaxInputObjectBytes)
	case !isSHA256Hex(o.SHA256):
		return fieldErr(CodeInvalidField, field+".sha256", "must be 64 lowercase hex digits")
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validateInputObjects checks stdin_object and files_objects: exec tasks
// only, each a valid reference, neither naming what the task also
// carries inline (stdin, a files path).
func (t *Task) validateInputObjects() error {
	if t.StdinObject == nil && len(t.FilesObjects) == 0 {
		return nil
	}
	if t.Kind != KindExec {
		return fieldErr(CodeContradictory, "stdin_object", "only exec tasks take input objects")
	}
	if t.StdinObject != nil {
		if len(t.Stdin) > 0 {
			return fieldErr(CodeContradictory, "stdin_object", "set stdin or stdin_object, not both")
		}
		if err := t.StdinObject.validate("stdin_object"); err != nil {
			return err
		}
	}
	if len(t.Files)+len(t.FilesObjects) > MaxFiles {
		return fieldErr(CodeTooLarge, "files_objects", "%d files with files, at most %d", len(t.Files)+len(t.FilesObjects), MaxFiles)
	}
	cleaned := make(map[string]bool, len(t.Files))
	for p := range t.Files {
		c, _ := CleanRelPath("files", p) // checked by validateFiles
		cleaned[c] = true
	}
	for p, o := range t.FilesObjects {
		c, err := CleanRelPath("files_objects", p)
		if err != nil {
			return err
		}
		if cleaned[c] {
			return fieldErr(CodeContradictory, "files_objects."+p, "the path is also in files; give its content once")
		}
		if err := o.validate("files_objects." + p); err != nil {
			return err
		}
	}
	return nil
}
