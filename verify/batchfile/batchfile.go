package batchfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/warrenhq/warren/messages"
)

// Line is one proof of a verify batch: a line of a JSONL batch, or
// the <id>.json beside <id>.v / <id>.lean in a batch directory (where id
// and proof come from the file names and contents).
type Line struct {
	ID        string `json:"id"`
	Theorem   string `json:"theorem"`
	Statement string `json:"statement"`
	Proof     string `json:"proof"`
	Profile   string `json:"profile,omitempty"`
	Header    string `json:"header,omitempty"`
}

// Error says where a batch is wrong and what to fix. Line is 0 for
// a directory entry.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// batchFileName is the JSONL file a batch directory may hold instead of
// per-proof files.
const batchFileName = "batch.jsonl"

// proofExts are the proof file extensions a batch directory may hold.
var proofExts = []string{".v", ".lean"}

// Load turns a verify batch into tasks: a JSONL file (one Line a
// line; blank lines skipped) or a directory laid out as docs/verify.md
// describes. Lines without a profile get defaultProfile. The tasks are
// validated except for Batch, which the caller sets before publishing.
func Load(path, defaultProfile string) ([]messages.Task, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("cannot read the batch: %v", err)}
	}
	var lines []located
	if fi.IsDir() {
		lines, err = readBatchDir(path)
	} else {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			lines, err = readJSONL(path, f)
			f.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, &Error{Path: path, Msg: "the batch holds no proofs"}
	}
	tasks := make([]messages.Task, 0, len(lines))
	seen := map[string]located{}
	for _, l := range lines {
		if prev, dup := seen[l.ID]; dup && l.ID != "" {
			return nil, l.err(fmt.Sprintf("id %q is used twice (also at %s); ids must be unique in a batch", l.ID, prev.where()))
		}
		seen[l.ID] = l
		t := messages.Task{
			V: messages.Version, ID: l.ID, Kind: messages.KindVerify,
			Profile: l.Profile,
			Verify:  &messages.VerifySpec{Theorem: l.Theorem, Statement: l.Statement, Proof: l.Proof, Header: l.Header},
		}
		if t.Profile == "" {
			t.Profile = defaultProfile
		}
		check := t
		check.Batch = "batch" // the caller's batch is not known yet
		if err := check.Validate(); err != nil {
			return nil, l.err(fixHint(err))
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// located is a batch line and where it came from.
type located struct {
	Line
	path string
	line int
}

func (l located) where() string {
	if l.line > 0 {
		return fmt.Sprintf("%s:%d", l.path, l.line)
	}
	return l.path
}

func (l located) err(msg string) error { return &Error{Path: l.path, Line: l.line, Msg: msg} }

// fixHint turns a task validation error into advice about the batch line.
func fixHint(err error) string {
	var me *messages.Error
	if !errors.As(err, &me) {
		return err.Error()
	}
	field := strings.TrimPrefix(me.Field, "verify.")
	switch me.Field {
	case "v", "kind":
		field = ""
	}
	if field == "" {
		return me.Msg
	}
	return fmt.Sprintf("%q: %s", field, me.Msg)
}

func readJSONL(path string, r io.Reader) ([]located, error) {
	var out []located
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), messages.MaxTaskBytes+1)
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var bl Line
		if err := decodeLine(raw, &bl); err != nil {
			return nil, &Error{Path: path, Line: n, Msg: err.Error()}
		}
		out = append(out, located{Line: bl, path: path, line: n})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &Error{Path: path, Line: n + 1, Msg: fmt.Sprintf("line longer than %d bytes; shorten the proof or split it", messages.MaxTaskBytes)}
		}
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	return out, nil
}

// decodeLine decodes one JSON object strictly: unknown fields are typos.
func decodeLine(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%q must be a %s", te.Field, te.Type)
		}
		return fmt.Errorf("not a JSON object with id, theorem, statement, proof (optional profile, header): %v", err)
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line; put one proof per line")
	}
	return nil
}

// readBatchDir reads a batch directory: batch.jsonl if present, else one
// <id>.json (theorem, statement, optional header, profile) per <id>.v or
// <id>.lean.
func readBatchDir(dir string) ([]located, error) {
	if _, err := os.Stat(filepath.Join(dir, batchFileName)); err == nil {
		f, err := os.Open(filepath.Join(dir, batchFileName))
		if err != nil {
			return nil, &Error{Path: dir, Msg: err.Error()}
		}
		defer f.Close()
		return readJSONL(filepath.Join(dir, batchFileName), f)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &Error{Path: dir, Msg: err.Error()}
	}
	byID := map[string]string{} // id -> proof file
	metas := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		ext := filepath.Ext(name)
		id := strings.TrimSuffix(name, ext)
		switch {
		case ext == ".json":
			metas[id] = true
		case contains(proofExts, ext):
			if other, dup := byID[id]; dup {
				return nil, &Error{Path: filepath.Join(dir, name), Msg: fmt.Sprintf("two proofs for id %q (%s too); keep one", id, other)}
			}
			byID[id] = name
		}
	}
	for id := range metas {
		if _, ok := byID[id]; !ok {
			return nil, &Error{Path: filepath.Join(dir, id+".json"), Msg: fmt.Sprintf("no proof file %s.v or %s.lean beside it", id, id)}
		}
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]located, 0, len(ids))
	for _, id := range ids {
		metaPath := filepath.Join(dir, id+".json")
		if !metas[id] {
			return nil, &Error{Path: filepath.Join(dir, byID[id]), Msg: fmt.Sprintf("missing %s.json with the theorem and statement", id)}
		}
		meta, err := os.ReadFile(metaPath)
		if err != nil {
			return nil, &Error{Path: metaPath, Msg: err.Error()}
		}
		var bl Line
		if err := decodeLine(meta, &bl); err != nil {
			return nil, &Error{Path: metaPath, Msg: err.Error()}
		}
		if bl.ID != "" && bl.ID != id {
			return nil, &Error{Path: metaPath, Msg: fmt.Sprintf("id %q differs from the file name %q; drop id or rename", bl.ID, id)}
		}
		if bl.Proof != "" {
			return nil, &Error{Path: metaPath, Msg: fmt.Sprintf("proof belongs in %s, not in the JSON", byID[id])}
		}
		proof, err := os.ReadFile(filepath.Join(dir, byID[id]))
		if err != nil {
			return nil, &Error{Path: filepath.Join(dir, byID[id]), Msg: err.Error()}
		}
		bl.ID, bl.Proof = id, string(proof)
		out = append(out, located{Line: bl, path: metaPath})
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
