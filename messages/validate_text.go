package messages

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// validateText refuses a string field that is not valid UTF-8, by its full
// path. JSON can carry only UTF-8 in a string: encoding/json would replace
// each invalid byte with U+FFFD and the task would run with other bytes
// than the user gave. Content that may be any bytes is Stdin and Files
// (Bytes); secrets are checked where they are sealed.
func (t *Task) validateText() error {
	for i, a := range t.Argv {
		if err := checkUTF8(fmt.Sprintf("argv[%d]", i), a); err != nil {
			return err
		}
	}
	fields := []struct{ name, s string }{{"shell", t.Shell}, {"cwd", t.Cwd}, {"pool", t.Pool}, {"profile", t.Profile}, {"reply", t.Reply}}
	if v := t.Verify; v != nil {
		fields = append(fields, struct{ name, s string }{"verify.theorem", v.Theorem},
			struct{ name, s string }{"verify.statement", v.Statement},
			struct{ name, s string }{"verify.proof", v.Proof},
			struct{ name, s string }{"verify.header", v.Header})
	}
	for _, f := range fields {
		if err := checkUTF8(f.name, f.s); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(t.Env) {
		if err := checkUTF8("env."+k, t.Env[k]); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(t.Files) {
		if err := checkUTF8("files", p); err != nil {
			return err
		}
	}
	for i, o := range t.Outputs {
		if err := checkUTF8(fmt.Sprintf("outputs[%d]", i), o); err != nil {
			return err
		}
	}
	return nil
}

// checkUTF8 refuses s when it is not valid UTF-8; the message never quotes
// s (an env value may be a secret).
func checkUTF8(field, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return fieldErr(CodeInvalidUTF8, field, "not valid UTF-8 (JSON would alter the bytes); give binary content as a file or stdin, which take any bytes")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
