package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warrenhq/warren/messages"
)

// The walkthrough of docs/sandboxes.md, run verbatim with the stock `nats`
// CLI against a broker and a `warren worker` serving sessions, isolated.
func TestSandboxesWalkthroughRunsVerbatim(t *testing.T) {
	nats := natsCLI(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "sandboxes.md"))
	require.NoError(t, err)
	doc := string(data)
	e := newE2E(t)
	e.startSandboxedWorker(t, 1, "--drain-timeout", "5s")
	shell := walkthroughShell(t, nats, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	evOut := startEvents(t, shell(ctx, docBlock(t, doc, "sandbox walkthrough: events")), func() bool { return e.b.Server.HasInterest("_INBOX.demo.out") })

	script := shell(ctx, docBlock(t, doc, "sandbox walkthrough: session"))
	var out, errb bytes.Buffer
	script.Stdout, script.Stderr = &out, &errb
	require.NoError(t, script.Run(), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	var lines []string // the replies, without the blank lines nats req adds
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 5, out.String())
	var created messages.SandboxReply
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &created))
	require.NotNil(t, created.Sandbox)
	require.NotEmpty(t, created.Token)
	exit, err := messages.DecodeSandboxReply([]byte(lines[1]))
	require.NoError(t, err)
	require.Zero(t, exit.Exit.ExitCode)
	require.EqualValues(t, 1, exit.Exit.Events)
	read, err := messages.DecodeSandboxReply([]byte(lines[3]))
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(read.Data))
	require.True(t, read.EOF)
	require.Equal(t, `{"v":1}`, lines[4])
	require.Eventually(t, func() bool { return strings.Contains(evOut.String(), `"data":"aGkK"`) },
		30*time.Second, 10*time.Millisecond, "events seen: %s", evOut.String())
}
