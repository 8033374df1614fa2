package messages_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/warrenhq/warren/messages"
)

// FuzzDecodeTask: any input either decodes to a task that validates and
// round-trips, or is refused with a *messages.Error; it never panics.
func FuzzDecodeTask(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"t","batch":"b","kind":"exec","argv":["true"]}`))
	f.Add([]byte(`{"v":1,"id":"t","batch":"b","kind":"exec","shell":"echo","files":{"a/b":"c"},"limits":{"wall_timeout_ms":5}}`))
	f.Add([]byte(`{"v":1,"id":"t","batch":"b","kind":"verify","profile":"coq","verify":{"theorem":"x","statement":"True","proof":"exact I."}}`))
	f.Add([]byte(`{"v":1,"id":"t","batch":"b","kind":"exec","argv":["a\u0000"]}`))
	f.Add([]byte(`{"v":1,"id":"t","batch":"b","kind":"exec","argv":["cat"],"stdin":{"base64":"/wA="},"files":{"t":{"base64":"f0VMRg=="}}}`))
	f.Add([]byte(`{"v":1,"id":"t","batch":"b","kind":"exec","argv":["cat"],"stdin_object":{"name":"sha256-ab","size":3,"sha256":"` + strings.Repeat("ab", 32) + `"}}`))
	f.Add([]byte(`{"v":1,"id":"t","batch":"b","kind":"exec","argv":["cat"],"files":{"a":"x"},"files_objects":{"a/b":{"name":"n","size":0,"sha256":"` + strings.Repeat("0", 64) + `"}}}`))
	f.Add([]byte("\xff"))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		task, err := messages.DecodeTask(data)
		if err != nil {
			var me *messages.Error
			if !errors.As(err, &me) || me.Code == "" || me.Msg == "" {
				t.Fatalf("refusal without a code and message: %v", err)
			}
			return
		}
		if err := task.Validate(); err != nil {
			t.Fatalf("decoded task fails validation: %v", err)
		}
		for p := range task.FilesObjects {
			c, err := messages.CleanRelPath("files_objects", p)
			if err != nil || strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") {
				t.Fatalf("accepted input object path escapes: %q -> %q %v", p, c, err)
			}
		}
		for p := range task.Files {
			c, err := messages.CleanRelPath("files", p)
			if err != nil || strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") {
				t.Fatalf("accepted file path escapes: %q -> %q %v", p, c, err)
			}
		}
		for _, a := range task.Command() {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("accepted NUL in argv")
			}
		}
		again, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := messages.DecodeTask(again); err != nil {
			t.Fatalf("round trip refused: %v", err)
		}
	})
}

// FuzzCleanRelPath: an accepted path never leaves its directory.
func FuzzCleanRelPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "a/../../b", "/abs", "a//b/./c", "..", "a/..", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := messages.CleanRelPath("f", p)
		if err != nil {
			return
		}
		if c == "." || c == ".." || strings.HasPrefix(c, "/") || strings.HasPrefix(c, "../") {
			t.Fatalf("%q cleaned to escaping %q", p, c)
		}
	})
}

// FuzzDecodeResult never panics.
func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"a","batch":"b","status":"ok"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = messages.DecodeResult(data)
		_, _ = messages.DecodeEvent(data)
	})
}

// FuzzDecodeSandboxRequest: any body either decodes to a request that
// validates for its op and round-trips, or is refused with a coded
// *messages.Error; it never panics.
func FuzzDecodeSandboxRequest(f *testing.F) {
	f.Add("exec", []byte(`{"v":1,"id":"h1.0123456789abcdef","token":"t","exec":{"argv":["true"],"reply":"_INBOX.x","stdin":"AAE="}}`))
	f.Add("create", []byte(`{"v":1,"create":{"idle_ms":5,"env":{"A":"b"},"network":"loopback"}}`))
	f.Add("write", []byte(`{"v":1,"id":"h1.0123456789abcdef","token":"t","file":{"path":"a/b","data":"AAE=","ranged":true}}`))
	f.Add("kill", []byte(`{"v":1,"id":"h1.0123456789abcdef","token":"t","kill":{"pid":4}}`))
	f.Add("list", []byte("\xff"))
	f.Fuzz(func(t *testing.T, op string, data []byte) {
		r, err := messages.DecodeSandboxRequest(messages.SandboxOp(op), data)
		if err != nil {
			var me *messages.Error
			if !errors.As(err, &me) || me.Code == "" || me.Msg == "" {
				t.Fatalf("refusal without a code and message: %v", err)
			}
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := messages.DecodeSandboxRequest(messages.SandboxOp(op), b); err != nil {
			t.Fatalf("re-encoded request refused: %v", err)
		}
	})
}

// FuzzDecodeSandboxReply: a reply decodes or is refused with a code; an
// error reply comes back as an error.
func FuzzDecodeSandboxReply(f *testing.F) {
	f.Add([]byte(`{"v":1,"error":{"code":"no_capacity","message":"x"}}`))
	f.Add([]byte(`{"v":1,"exit":{"pid":3,"exit_code":0,"events":2}}`))
	f.Add([]byte(`{"v":1,"error":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := messages.DecodeSandboxReply(data)
		if err != nil {
			var me *messages.Error
			if !errors.As(err, &me) || me.Code == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		if r.Error != nil || r.V != messages.Version {
			t.Fatalf("decoded reply %+v", r)
		}
		if _, err := messages.DecodeSandboxEvent(data); err != nil {
			var me *messages.Error
			if !errors.As(err, &me) {
				t.Fatal(err)
			}
		}
	})
}

// FuzzDecodeIDChunk: any input either decodes to a chunk of valid ids
// that round-trips, or is refused with a *messages.Error; it never panics.
func FuzzDecodeIDChunk(f *testing.F) {
	f.Add([]byte(`{"v":1,"ids":["1","2","a-b_c"]}`))
	f.Add([]byte(`{"v":1,"ids":[]}`))
	f.Add([]byte(`{"v":2,"ids":["1"]}`))
	f.Add([]byte(`{"v":1,"ids":["a.b"]}`))
	f.Add([]byte(`{"v":1,"ids":["1"],"x":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := messages.DecodeIDChunk(data)
		if err != nil {
			var me *messages.Error
			if !errors.As(err, &me) || me.Code == "" || me.Msg == "" {
				t.Fatalf("refusal without a code and message: %v", err)
			}
			return
		}
		if len(c.IDs) == 0 {
			t.Fatal("accepted an empty chunk")
		}
		for _, id := range c.IDs {
			if !messages.ValidID(id) {
				t.Fatalf("accepted id %q", id)
			}
		}
		again, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := messages.DecodeIDChunk(again); err != nil {
			t.Fatalf("round trip refused: %v", err)
		}
	})
}
