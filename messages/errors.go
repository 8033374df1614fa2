package messages

import "fmt"

// Code is a stable, machine-readable reason for refusing a document. Codes
// never change meaning once released; clients may switch on them.
type Code string

// Codes returned by decoding and validation.
const (
	CodeMalformed     Code = "malformed"           // not JSON, or JSON of the wrong shape
	CodeVersion       Code = "unsupported_version" // "v" is not Version
	CodeTooLarge      Code = "too_large"           // the document or a field exceeds its limit
	CodeInvalidUTF8   Code = "invalid_utf8"        // bytes that are not UTF-8
	CodeMissingField  Code = "missing_field"       // a required field is empty
	CodeInvalidField  Code = "invalid_field"       // a field has a value outside its domain
	CodeUnknownKind   Code = "unknown_kind"        // kind is not exec or verify
	CodeNULByte       Code = "nul_byte"            // a NUL byte where the kernel cannot carry one
	CodePathTraversal Code = "path_traversal"      // a files path that is absolute or leaves the scratch dir
	CodeContradictory Code = "contradictory"       // fields that cannot all hold at once
	// CodeReplyForbidden: the reply subject is outside the task's own
	// events and the allowed inbox prefixes (see CheckReply).
	CodeReplyForbidden Code = "reply_forbidden"
	// CodeCleartextSecrets: a task on the wire carries secrets unsealed.
	CodeCleartextSecrets Code = "cleartext_secrets"
)

// Codes a worker puts in a Result's error when a valid task could not run.
const (
	CodeSandboxUnavailable Code = "sandbox_unavailable" // no host offered the isolation the task needs
	CodeSandboxSetup       Code = "sandbox_setup"       // a sandbox setup step failed; the command never ran
	CodeExecFailed         Code = "exec_failed"         // the command could not be executed (not found: exit 127; not executable, too long: 126); the task's failure, never retried
	CodeMaxDeliveries      Code = "max_deliveries"      // every delivery failed; the task is dead-lettered
	CodeCancelled          Code = "cancelled"           // cancelled by a user
	// CodeSecretsUnavailable: the task's secrets are sealed to a key this
	// worker does not hold (no seal key, or another pool's key).
	CodeSecretsUnavailable Code = "secrets_unavailable"
	// CodeInputUnavailable: an input object the task names (stdin_object,
	// files_objects) is not in its inputs store, or does not match the
	// size and sha256 the task gives (expired, replaced, or tampered with).
	CodeInputUnavailable Code = "input_unavailable"
	CodeInternal         Code = "internal" // a worker bug; see the message
)

// Error is a refusal with a stable code, the offending field and a message
// that tells the user what to change.
type Error struct {
	Code  Code   `json:"code"`
	Field string `json:"field,omitempty"`
	Msg   string `json:"message"`
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Msg)
}

// Is matches any *Error with the same code, so a decoded error satisfies
// errors.Is against the sentinels below.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; only their Code matters.
var (
	ErrMalformed          = &Error{Code: CodeMalformed, Msg: "malformed document"}
	ErrVersion            = &Error{Code: CodeVersion, Msg: "unsupported version"}
	ErrTooLarge           = &Error{Code: CodeTooLarge, Msg: "too large"}
	ErrInvalidUTF8        = &Error{Code: CodeInvalidUTF8, Msg: "invalid UTF-8"}
	ErrMissingField       = &Error{Code: CodeMissingField, Msg: "missing field"}
	ErrInvalidField       = &Error{Code: CodeInvalidField, Msg: "invalid field"}
	ErrUnknownKind        = &Error{Code: CodeUnknownKind, Msg: "unknown kind"}
	ErrNULByte            = &Error{Code: CodeNULByte, Msg: "NUL byte"}
	ErrPathTraversal      = &Error{Code: CodePathTraversal, Msg: "path traversal"}
	ErrContradictory      = &Error{Code: CodeContradictory, Msg: "contradictory fields"}
	ErrReplyForbidden     = &Error{Code: CodeReplyForbidden, Msg: "reply subject forbidden"}
	ErrCleartextSecrets   = &Error{Code: CodeCleartextSecrets, Msg: "cleartext secrets on the wire"}
	ErrSecretsUnavailable = &Error{Code: CodeSecretsUnavailable, Msg: "secrets cannot be opened here"}
)

func fieldErr(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Msg: fmt.Sprintf(format, args...)}
}
