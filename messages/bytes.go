package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Bytes is content that may hold any bytes: a task's stdin and its files.
// On the wire it is a JSON string when the bytes are valid UTF-8 (text
// stays readable in the stream and in hand-written JSONL), else an object
// {"base64": "..."} (standard encoding, with padding). Either form decodes;
// a JSON string can only carry UTF-8, so binary content must take the
// object form.
type Bytes []byte

// bytesObject is the wire form of binary content.
type bytesObject struct {
	Base64 *[]byte `json:"base64"`
}

// MarshalJSON writes a string for UTF-8 content, else the base64 object.
func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return json.Marshal(string(b))
	}
	raw := []byte(b)
	return json.Marshal(bytesObject{Base64: &raw})
}

// UnmarshalJSON reads either wire form.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	switch {
	case bytes.Equal(data, []byte("null")):
		*b = nil
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = Bytes(s)
		return nil
	}
	var o bytesObject
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return fmt.Errorf(`expected a string or {"base64": "..."}: %w`, err)
	}
	if o.Base64 == nil {
		return fmt.Errorf(`expected a string or {"base64": "..."}: no base64 field`)
	}
	*b = Bytes(*o.Base64)
	return nil
}
