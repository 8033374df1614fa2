package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/scheduler"
)

// create keeps each sandbox session's token in a 0600 file under
// --data-dir/sandboxes; the other commands take it from --token,
// WARREN_SANDBOX_TOKEN or that file.

type sandboxTokenFlag struct {
	Token string `name:"token" env:"WARREN_SANDBOX_TOKEN" help:"The sandbox's token (default: the one create kept in --data-dir)."`
}

// sandboxRecord is what create keeps per sandbox.
type sandboxRecord struct {
	ID      string    `json:"id"`
	Token   string    `json:"token"`
	Host    string    `json:"host"`
	Pool    string    `json:"pool"`
	Expires time.Time `json:"expires"`
	// Removed is when `warren sandbox rm` ended it (the token is then
	// dropped): later commands say the sandbox is gone rather than that no
	// token is kept. Pruned, as every record, once Expires has passed.
	Removed time.Time `json:"removed,omitzero"`
}

func sandboxDir(g *globals) string { return filepath.Join(g.DataDir, "sandboxes") }

func sandboxFile(g *globals, id string) string { return filepath.Join(sandboxDir(g), id+".json") }

func saveSandbox(g *globals, r sandboxRecord) error {
	if err := os.MkdirAll(sandboxDir(g), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := sandboxFile(g, r.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, sandboxFile(g, r.ID))
}

// removeSandbox drops id's token and keeps a tombstone in its place (see
// sandboxRecord.Removed).
func removeSandbox(g *globals, id string) error {
	var rec sandboxRecord
	if b, err := os.ReadFile(sandboxFile(g, id)); err == nil {
		_ = json.Unmarshal(b, &rec)
	}
	if rec.ID == "" { // created elsewhere (--token): nothing kept here
		return nil
	}
	rec.Token, rec.Removed = "", time.Now().UTC()
	return saveSandbox(g, rec)
}

// pruneSandboxes removes the records of sandboxes past their expiry:
// their tokens are no longer accepted, and they can no longer be running.
func pruneSandboxes(g *globals, now time.Time) {
	ents, err := os.ReadDir(sandboxDir(g))
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		p := filepath.Join(sandboxDir(g), name)
		var rec sandboxRecord
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &rec) != nil || rec.Expires.IsZero() || now.Before(rec.Expires) {
			continue // unreadable records are left for the user to look at
		}
		_ = os.Remove(p)
	}
}

// openSandbox is a handle on id with its token from the flag, the
// environment or the kept file.
func (f sandboxTokenFlag) open(g *globals, c *scheduler.Client, id string) (*scheduler.Sandbox, error) {
	if _, _, err := messages.ParseSandboxID(id); err != nil {
		return nil, err
	}
	var rec sandboxRecord
	if b, err := os.ReadFile(sandboxFile(g, id)); err == nil {
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", sandboxFile(g, id), err)
		}
	}
	token := f.Token
	if token == "" {
		token = rec.Token
	}
	if token == "" && !rec.Removed.IsZero() {
		return nil, &messages.Error{Code: messages.CodeSandboxGone, Msg: fmt.Sprintf(
			"sandbox %s was removed (warren sandbox rm at %s): create a new one", id, rec.Removed.Format(time.RFC3339))}
	}
	if token == "" {
		return nil, fmt.Errorf("no token for sandbox %s: pass --token or WARREN_SANDBOX_TOKEN (create prints it with --json)", id)
	}
	return c.OpenSandbox(g.Ctx, id, token, rec.Pool)
}
