package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
)

// DecodeTask turns bytes from the wire into a validated task. Any refusal is
// an *Error with a stable code.
func DecodeTask(data []byte) (*Task, error) {
	if len(data) > MaxTaskBytes {
		return nil, fieldErr(CodeTooLarge, "", "task is %d bytes, at most %d; put large inputs in files the task fetches, or split it", len(data), MaxTaskBytes)
	}
	if !utf8.Valid(data) {
		return nil, fieldErr(CodeInvalidUTF8, InvalidUTF8Field(data), `task is not valid UTF-8; give binary stdin or file content as {"base64": "..."}`)
	}
	var t Task
	if err := decodeStrict(data, &t); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if len(t.Secrets) > 0 {
		return nil, fieldErr(CodeCleartextSecrets, "secrets", "secrets arrived unsealed and are now stored in the task stream: rotate them, and submit through the scheduler with the pool's key (--pool-key) so they are sealed")
	}
	return &t, nil
}

// decodeStrict decodes exactly one JSON object, refusing unknown fields and
// trailing data, and maps encoding/json errors to *Error.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fieldErr(CodeMalformed, typeErr.Field, "expected %s, got JSON %s", typeErr.Type, typeErr.Value)
		}
		return fieldErr(CodeMalformed, "", "not a JSON task object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fieldErr(CodeMalformed, "", "trailing data after the JSON object")
	}
	return nil
}

// DecodeResult decodes a stored result. Results are written by workers, so
// unknown fields are tolerated (a newer worker may add some).
func DecodeResult(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fieldErr(CodeMalformed, "", "not a JSON result: %v", err)
	}
	if r.V != Version {
		return nil, fieldErr(CodeVersion, "v", "result version %d is not supported", r.V)
	}
	return &r, nil
}

// DecodeEvent decodes a live event; like results, unknown fields are tolerated.
func DecodeEvent(data []byte) (*Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fieldErr(CodeMalformed, "", "not a JSON event: %v", err)
	}
	if e.V != Version {
		return nil, fieldErr(CodeVersion, "v", "event version %d is not supported", e.V)
	}
	return &e, nil
}
