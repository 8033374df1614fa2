package messages

import (
	"path"
	"strings"
	"unicode/utf8"
)

// Size limits enforced by validation. They stop a single document from
// exhausting a worker. The broker counts a message's headers too: a task
// body of MaxTaskBytes does not fit a stock server's 1 MiB max_payload, so
// a publisher also checks the whole message against the server's limit
// (scheduler does, from the server's INFO).
const (
	MaxTaskBytes   = 1 << 20 // whole encoded task
	MaxIDBytes     = 128
	MaxArgs        = 4096
	MaxEnvVars     = 256
	MaxFiles       = 1024
	MaxPathBytes   = 4096
	MaxLimitMillis = int64(7 * 24 * 3600 * 1000) // a week: anything longer is a typo
)

// reservedEnv are set by the sandbox and cannot be overridden by a task.
var reservedEnv = map[string]bool{"HOME": true, "TMPDIR": true, "PWD": true}

// Validate checks a task and returns the first problem as an *Error.
func (t *Task) Validate() error {
	if t.V != Version {
		return fieldErr(CodeVersion, "v", "protocol version %d is not supported; send \"v\": %d", t.V, Version)
	}
	if err := checkID("id", t.ID); err != nil {
		return err
	}
	if err := checkBatchID("batch", t.Batch); err != nil {
		return err
	}
	if t.Attempt < 0 {
		return fieldErr(CodeInvalidField, "attempt", "must not be negative, got %d", t.Attempt)
	}
	if err := t.validateText(); err != nil {
		return err
	}
	if err := t.validateKind(); err != nil {
		return err
	}
	if err := t.validateCommand(); err != nil {
		return err
	}
	if err := t.validateEnv(); err != nil {
		return err
	}
	if err := t.validateSecrets(); err != nil {
		return err
	}
	if err := t.validateExecSize(); err != nil {
		return err
	}
	if err := t.validateFiles(); err != nil {
		return err
	}
	if err := t.validateInputObjects(); err != nil {
		return err
	}
	if t.Cwd != "" {
		if _, err := CleanRelPath("cwd", t.Cwd); err != nil {
			return err
		}
	}
	if err := t.Limits.Validate(); err != nil {
		return err
	}
	if err := t.validateOutputs(); err != nil {
		return err
	}
	switch t.Network {
	case "", NetworkNone, NetworkLoopback:
	default:
		return fieldErr(CodeInvalidField, "network", "%q is not a network policy; use none or loopback", t.Network)
	}
	switch t.Isolation {
	case "", IsolationAuto, IsolationNamespace, IsolationLandlock, IsolationNone:
	default:
		return fieldErr(CodeInvalidField, "isolation", "%q is not an isolation mode; use auto, namespace, landlock or none", t.Isolation)
	}
	if t.Pool != "" && !namePattern.MatchString(t.Pool) {
		return fieldErr(CodeInvalidField, "pool", "must match %s", namePattern)
	}
	if t.Profile != "" && !namePattern.MatchString(t.Profile) {
		return fieldErr(CodeInvalidField, "profile", "must match %s", namePattern)
	}
	if t.Reply != "" && (len(t.Reply) > 256 || !replyPattern.MatchString(t.Reply)) {
		return fieldErr(CodeInvalidField, "reply", "must be a NATS subject without wildcards, at most 256 bytes")
	}
	return nil
}

func (t *Task) validateKind() error {
	switch t.Kind {
	case KindExec:
		if t.Verify != nil {
			return fieldErr(CodeContradictory, "verify", "only verify tasks take a verify section; set kind to verify or drop it")
		}
	case KindVerify:
		if t.Verify == nil {
			return fieldErr(CodeMissingField, "verify", "a verify task needs theorem, statement and proof")
		}
		if t.Profile == "" {
			return fieldErr(CodeMissingField, "profile", "a verify task names the checker profile, e.g. \"coq\"")
		}
		if len(t.Argv) > 0 || t.Shell != "" {
			return fieldErr(CodeContradictory, "argv", "a verify task runs its profile's checker; drop argv/shell")
		}
		return t.Verify.validate()
	case "":
		return fieldErr(CodeMissingField, "kind", "set kind to exec or verify")
	default:
		return fieldErr(CodeUnknownKind, "kind", "%q is not a task kind; use exec or verify", t.Kind)
	}
	return nil
}

func (v *VerifySpec) validate() error {
	if !validTheorem(v.Theorem) {
		return fieldErr(CodeInvalidField, "verify.theorem", "must be a qualified identifier: names of letters (any script), digits, _ and ', not starting with a digit or ', joined by . (got %q)", v.Theorem)
	}
	if strings.TrimSpace(v.Statement) == "" {
		return fieldErr(CodeMissingField, "verify.statement", "the expected statement is required")
	}
	if strings.TrimSpace(v.Proof) == "" {
		return fieldErr(CodeMissingField, "verify.proof", "the proof is required")
	}
	for name, s := range map[string]string{"verify.statement": v.Statement, "verify.proof": v.Proof, "verify.header": v.Header} {
		if strings.IndexByte(s, 0) >= 0 {
			return fieldErr(CodeNULByte, name, "contains a NUL byte")
		}
	}
	return nil
}

func (t *Task) validateCommand() error {
	if t.Kind != KindExec {
		return nil
	}
	switch {
	case len(t.Argv) > 0 && t.Shell != "":
		return fieldErr(CodeContradictory, "argv", "set argv or shell, not both")
	case len(t.Argv) == 0 && t.Shell == "":
		return fieldErr(CodeMissingField, "argv", "an exec task needs argv or shell")
	case len(t.Argv) > MaxArgs:
		return fieldErr(CodeTooLarge, "argv", "%d arguments, at most %d", len(t.Argv), MaxArgs)
	}
	if len(t.Argv) > 0 && t.Argv[0] == "" {
		return fieldErr(CodeInvalidField, "argv[0]", "the program name is empty")
	}
	for i, a := range t.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fieldErr(CodeNULByte, "argv", "argument %d contains a NUL byte, which exec cannot pass", i)
		}
	}
	if strings.IndexByte(t.Shell, 0) >= 0 {
		return fieldErr(CodeNULByte, "shell", "contains a NUL byte, which exec cannot pass")
	}
	return nil
}

func (t *Task) validateEnv() error {
	if len(t.Env) > MaxEnvVars {
		return fieldErr(CodeTooLarge, "env", "%d variables, at most %d", len(t.Env), MaxEnvVars)
	}
	return checkEnvVars("env", t.Env)
}

// checkEnvVars checks names and values of environment variables; messages
// never quote a value (it may be a secret).
func checkEnvVars(field string, vars map[string]string) error {
	for k, v := range vars {
		if !envPattern.MatchString(k) {
			return fieldErr(CodeInvalidField, field, "%q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", k)
		}
		if reservedEnv[k] {
			return fieldErr(CodeInvalidField, field, "%s is set by the sandbox and cannot be overridden", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fieldErr(CodeNULByte, field, "the value of %s contains a NUL byte", k)
		}
	}
	return nil
}

func (t *Task) validateFiles() error {
	if len(t.Files) > MaxFiles {
		return fieldErr(CodeTooLarge, "files", "%d files, at most %d", len(t.Files), MaxFiles)
	}
	for p := range t.Files {
		if _, err := CleanRelPath("files", p); err != nil {
			return err
		}
	}
	return nil
}

// CleanRelPath checks that p names a place inside a directory: relative, no
// ".." component, no NUL, and returns its lexically cleaned form. It is a
// lexical check only; the sandbox's files API also refuses symlinks when it
// opens the path.
func CleanRelPath(field, p string) (string, error) {
	switch {
	case p == "":
		return "", fieldErr(CodeInvalidField, field, "empty path")
	case len(p) > MaxPathBytes:
		return "", fieldErr(CodeTooLarge, field, "path longer than %d bytes", MaxPathBytes)
	case strings.IndexByte(p, 0) >= 0:
		return "", fieldErr(CodeNULByte, field, "path %q contains a NUL byte", p)
	case strings.HasPrefix(p, "/"):
		return "", fieldErr(CodePathTraversal, field, "path %q is absolute; paths are relative to the scratch directory", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fieldErr(CodePathTraversal, field, "path %q has a \"..\" component; paths must stay inside the scratch directory", p)
		}
	}
	c := path.Clean(p)
	if c == "." {
		return "", fieldErr(CodeInvalidField, field, "path %q names the scratch directory itself", p)
	}
	return c, nil
}

// Validate checks that no limit is negative or absurdly large.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
		max  int64
	}{
		{"limits.wall_timeout_ms", l.WallTimeoutMS, MaxLimitMillis},
		{"limits.cpu_time_ms", l.CPUTimeMS, MaxLimitMillis},
		{"limits.memory_bytes", l.MemoryBytes, 1 << 40},
		{"limits.processes", l.Processes, 1 << 20},
		{"limits.file_size_bytes", l.FileSizeBytes, 1 << 40},
		{"limits.output_bytes", l.OutputBytes, 1 << 30},
		{"limits.open_files", l.OpenFiles, 1 << 20},
		{"limits.disk_bytes", l.DiskBytes, 1 << 40},
	} {
		if f.v < 0 {
			return fieldErr(CodeInvalidField, f.name, "must not be negative (got %d); use 0 for the worker's default", f.v)
		}
		if f.v > f.max {
			return fieldErr(CodeInvalidField, f.name, "%d exceeds the maximum %d", f.v, f.max)
		}
	}
	return nil
}

// ValidID reports whether s may be a task id or batch name.
func ValidID(s string) bool { return len(s) <= MaxIDBytes && idPattern.MatchString(s) }

func checkID(field, v string) error {
	if v == "" {
		return fieldErr(CodeMissingField, field, "required")
	}
	if len(v) > MaxIDBytes || !idPattern.MatchString(v) {
		if !utf8.ValidString(v) {
			return fieldErr(CodeInvalidUTF8, field, "not UTF-8")
		}
		return fieldErr(CodeInvalidField, field, "%q must be 1-%d characters of A-Z a-z 0-9 _ -", v, MaxIDBytes)
	}
	return nil
}

// theoremPart is one component of a theorem's qualified name, as Coq and
// Lean read an identifier: a letter (any script) or _, then letters,
// digits, _ and '.
var theoremPart = NewLazyRegexp(`^[\p{L}_][\p{L}\p{N}_']*$`)

// maxTheoremBytes bounds a theorem's qualified name.
const maxTheoremBytes = 1024

func validTheorem(s string) bool {
	if s == "" || len(s) > maxTheoremBytes {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !theoremPart.MatchString(part) {
			return false
		}
	}
	return true
}
