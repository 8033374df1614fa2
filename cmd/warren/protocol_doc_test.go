package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warrenhq/warren/internal/syncbuf"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// protocolDoc is docs/protocol.md.
func protocolDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
	require.NoError(t, err)
	return string(data)
}

// docBlock is the fenced code block right after the marker
// "<!-- NAME -->" in doc.
func docBlock(t *testing.T, doc, name string) string {
	t.Helper()
	re := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(name) + " -->\\s*```[a-z]*\\n(.*?)```")
	m := re.FindStringSubmatch(doc)
	require.NotNil(t, m, "docs/protocol.md has no code block marked <!-- %s -->", name)
	return m[1]
}

// The walkthrough of docs/protocol.md, run verbatim with the stock `nats`
// CLI against a broker and a real worker: the events subscription, then
// the publish-and-wait script, whose last line must be the stored result.
func TestProtocolWalkthroughRunsVerbatim(t *testing.T) {
	nats := natsCLI(t)
	doc := protocolDoc(t)
	e := newE2E(t)
	e.startWorker(t, 1)
	shell := walkthroughShell(t, nats, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Terminal 2: live events. Wait until its subscription is in place.
	evOut := startEvents(t, shell(ctx, docBlock(t, doc, "walkthrough: events")), func() bool { return e.b.Server.HasInterest(messages.EventSubject("demo", "t1")) })

	// Terminal 1: publish, then wait for the stored result.
	script := shell(ctx, docBlock(t, doc, "walkthrough: submit"))
	var out, errb bytes.Buffer
	script.Stdout, script.Stderr = &out, &errb
	require.NoError(t, script.Run(), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	r, err := messages.DecodeResult([]byte(lines[len(lines)-1]))
	require.NoError(t, err, "the script's last line is the result: %s", out.String())
	require.Equal(t, messages.StatusOK, r.Status)
	require.Equal(t, "hi\n", string(r.Stdout))
	require.Equal(t, "t1", r.TaskID)
	require.Equal(t, "demo", r.Batch)
	require.Equal(t, 1, r.Attempt)

	// The events the doc says arrive, in order, ending with the exit.
	var types []messages.EventType
	require.Eventually(t, func() bool {
		types = nil
		for _, l := range strings.Split(evOut.String(), "\n") {
			if ev, err := messages.DecodeEvent([]byte(l)); err == nil {
				types = append(types, ev.Type)
			}
		}
		return slices.Contains(types, messages.EventExit)
	}, 30*time.Second, 10*time.Millisecond, "events seen: %s", evOut.String())
	require.Equal(t, messages.EventStarted, types[0])
	require.Contains(t, types, messages.EventStdout)
	require.Equal(t, messages.EventExit, types[len(types)-1])
}

// walkthroughShell runs a doc's script with bash and the nats CLI against
// e's broker, in a process group of its own, with a clean nats config.
func walkthroughShell(t *testing.T, nats string, e *e2e) func(ctx context.Context, script string) *exec.Cmd {
	env := append(withoutEnv(os.Environ(), "NATS_CONTEXT"), "PATH="+filepath.Dir(nats)+":"+os.Getenv("PATH"),
		"NATS_URL="+e.b.URL, "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	return func(ctx context.Context, script string) *exec.Cmd {
		c := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		c.Env = env
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return c
	}
}

// jsonKeys is the set of keys of a JSON object, nested objects as a.b.
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m), string(data))
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			keys = append(keys, prefix+k)
			if sub, ok := v.(map[string]any); ok && k != "attempts" && k != "env" && k != "files" {
				walk(prefix+k+".", sub)
			}
		}
	}
	walk("", m)
	slices.Sort(keys)
	return keys
}

// The documents shown in docs/protocol.md are what Warren writes: decoded
// strictly into the Go type and encoded again, they have the same fields.
// A field omitted when empty must not be shown as present, and a field
// always written must be shown.
func TestProtocolDocExamplesMatchTheWire(t *testing.T) {
	doc := protocolDoc(t)
	tests := []struct {
		marker string
		into   any
	}{
		{"example: result", &messages.Result{}},
		{"example: result of a refused task", &messages.Result{}},
		{"example: event", &messages.Event{}},
		{"example: host record", &messages.HostInfo{}},
		{"example: manifest", &messages.BatchManifest{}},
		{"example: cancel request", &messages.CancelRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.marker, func(t *testing.T) {
			block := []byte(docBlock(t, doc, tt.marker))
			dec := json.NewDecoder(bytes.NewReader(block))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(tt.into), "the example has a field the type does not")
			again, err := json.Marshal(tt.into)
			require.NoError(t, err)
			require.Equal(t, jsonKeys(t, again), jsonKeys(t, block), "fields shown vs fields written")
		})
	}
}

// startEvents starts a walkthrough's events terminal (killed with its
// process group at the end of the test), waits until ready says its
// subscription is in place and returns its stdout.
func startEvents(t *testing.T, events *exec.Cmd, ready func() bool) *syncbuf.Buffer {
	t.Helper()
	var evOut, evErr syncbuf.Buffer
	events.Stdout, events.Stderr = &evOut, &evErr
	require.NoError(t, events.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-events.Process.Pid, syscall.SIGKILL)
		_ = events.Wait()
	})
	require.Eventually(t, ready, 30*time.Second, 10*time.Millisecond, "the events subscription never started: %s", evErr.String())
	return &evOut
}
