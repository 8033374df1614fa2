package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// InvalidUTF8Field names the field of a JSON document whose string (a
// value or a key) holds bytes that are not UTF-8, as validation names
// fields: argv[1], env.NAME, cwd. It is "" when data is UTF-8 or does not
// parse far enough to say.
func InvalidUTF8Field(data []byte) string {
	if utf8.Valid(data) {
		return ""
	}
	type frame struct {
		array   bool
		key     string
		index   int
		wantKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.array:
				fmt.Fprintf(&b, "[%d]", f.index)
			case f.key == "":
			case b.Len() == 0:
				b.WriteString(f.key)
			default:
				b.WriteString("." + f.key)
			}
		}
		return b.String()
	}
	advance := func() {
		if len(stack) == 0 {
			return
		}
		if f := stack[len(stack)-1]; f.array {
			f.index++
		} else {
			f.wantKey = true
		}
	}
	top := func(stack []*frame) *frame {
		if len(stack) == 0 {
			return nil
		}
		return stack[len(stack)-1]
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var prev int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		raw := data[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{wantKey: true})
			case '[':
				stack = append(stack, &frame{array: true})
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				advance()
			}
		case string:
			if f := top(stack); f != nil && !f.array && f.wantKey {
				if !utf8.Valid(raw) {
					f.key = "" // a key is named by its object, never echoed
					return strings.TrimPrefix(path()+" (a key)", " ")
				}
				f.key, f.wantKey = v, false
				continue
			}
			if !utf8.Valid(raw) {
				return path()
			}
			advance()
		default:
			advance()
		}
	}
}
