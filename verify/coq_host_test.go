package verify

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/verify/coqpolicy"
)

// TestCoqHostView: the stdlib view holds every compiled file of the
// library and none of its sources; checkers on one scratch root share one
// directory (prepared concurrently, once).
func TestCoqHostView(t *testing.T) {
	requireCoq(t)
	c := newTestChecker(t)
	p := testProfiles(t).Get("coq")
	var wg sync.WaitGroup
	hosts := make([]*coqHost, 4)
	errs := make([]error, 4)
	for i := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other, err := New(Config{ScratchRoot: c.cfg.ScratchRoot})
			if err == nil {
				hosts[i], errs[i] = other.coqHost(context.Background(), p)
			} else {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	for i := range hosts {
		require.NoError(t, errs[i])
		require.Equal(t, hosts[0].dir, hosts[i].dir)
	}
	h := hosts[0]
	var vo, v int
	require.NoError(t, filepath.WalkDir(h.lib, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		switch {
		case strings.HasSuffix(path, ".vo"):
			vo++
		case strings.HasSuffix(path, ".v"):
			v++
		}
		return nil
	}))
	require.Zero(t, v, "sources in the view")
	var want int
	require.NoError(t, filepath.WalkDir(h.coqlib, func(path string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(path, ".vo") {
			want++
		}
		return err
	}))
	require.Equal(t, want, vo)
	require.FileExists(t, filepath.Join(h.plugin.Dir, "warren_policy.cmxs"))
	entries, err := os.ReadDir(c.cfg.ScratchRoot)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one shared directory, no temporary left")
}

// TestCoqProfileNotOfferedWithoutPlugin: a host that cannot build the
// policy plugin does not offer the Coq profile, and says why.
func TestCoqProfileNotOfferedWithoutPlugin(t *testing.T) {
	requireCoq(t)
	c := newTestChecker(t)
	ps, err := ParseProfiles([]byte("profiles:\n  - name: coq-broken\n    kind: coq\n    coq: {ocamlfind: /bin/false}\n  - name: coq\n    kind: coq\n"))
	require.NoError(t, err)
	svc, skipped := NewService(c, ps, nil)
	require.Equal(t, []string{"coq"}, svc.Profiles())
	require.Contains(t, skipped, "coq-broken")
	require.True(t, errors.Is(skipped["coq-broken"], coqpolicy.ErrBuild), "%v", skipped["coq-broken"])
}

// TestReadPolicy: a refusal names the command and its line as the task's
// author counts it (header lines apart); records missing or without the
// plugin's ready record are an error, never a verdict.
func TestReadPolicy(t *testing.T) {
	t.Parallel()
	k := &coqCheck{n: "n1", spec: &messages.VerifySpec{Header: "Require Import Arith.\nRequire Import Lia.", Proof: "x"}}
	write := func(t *testing.T, data string) string {
		dir := t.TempDir()
		if data != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, k.policyRecords()), []byte(data), 0o600))
		}
		return dir
	}
	v, err := k.readPolicy(write(t, `{"kind":"ready"}`+"\n"+`{"kind":"refused","line":5,"command":"Load","why":"reads a .v file from the host"}`))
	require.NoError(t, err)
	require.Equal(t, messages.ReasonDisallowedCommand, v.Reason)
	require.Contains(t, v.Messages, "line 3: Load (reads a .v file from the host)")

	v, err = k.readPolicy(write(t, `{"kind":"ready"}`+"\n"+`{"kind":"refused","line":2,"command":"Cd","why":"x"}`))
	require.NoError(t, err)
	require.Contains(t, v.Messages, "header line 2: Cd")

	for _, data := range []string{"", `{"kind":"declared","line":1,"command":"Axiom","names":["a"]}`, `{"kind":"bogus"}`} {
		_, err := k.readPolicy(write(t, data))
		var ie *InfraError
		require.ErrorAs(t, err, &ie, "records %q", data)
	}
}

// TestCoqHeaderGenerativeDeclarations: a header declaring an inductive
// type, a record or an opaque constant that the statement names makes the
// task unprovable (the statement is checked with its own copy of the
// header): rejected as statement_mismatch with a note naming the header's
// line. The controls: a header of Requires, scopes and transparent
// definitions is accepted, and so is an opaque header lemma the statement
// does not name (good_header_warning in the corpus).
func TestCoqHeaderGenerativeDeclarations(t *testing.T) {
	requireCoq(t)
	sb := testRunner(t)
	c := newTestChecker(t)
	p := testProfiles(t).Get("coq")
	tests := []struct{ name, header, theorem, statement, proof, want string }{
		{"inductive", "Inductive color := Red | Green.", "all_colors", "forall c : color, c = Red \\/ c = Green",
			"Theorem all_colors : forall c : color, c = Red \\/ c = Green.\nProof. destruct c; auto. Qed.", "header line 1: an inductive type or record"},
		{"record", "Require Import Arith.\nRecord point := { px : nat; py : nat }.", "pt", "forall p : point, p = {| px := px p; py := py p |}",
			"Theorem pt : forall p : point, p = {| px := px p; py := py p |}.\nProof. destruct p; reflexivity. Qed.", "header line 2: an inductive type or record"},
		{"opaque", "Definition k : nat.\nProof. exact 3. Qed.", "kk", "k = k", "Theorem kk : k = k.\nProof. reflexivity. Qed.",
			"header line 2: an opaque constant (Qed)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, _, err := c.Check(context.Background(), sb.run, p, &messages.VerifySpec{Theorem: tc.theorem, Statement: tc.statement, Header: tc.header, Proof: tc.proof})
			require.NoError(t, err)
			require.Equal(t, messages.ReasonStatementMismatch, v.Reason, v.Messages)
			require.Contains(t, v.Messages, tc.want)
		})
	}
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		v, _, err := c.Check(context.Background(), sb.run, p, &messages.VerifySpec{Theorem: "kk", Statement: "k + 0 = k",
			Header: "Require Import Arith.\nOpen Scope nat_scope.\nDefinition k := 3.\nDefinition t : nat. Proof. exact 3. Defined.",
			Proof:  "Theorem kk : k + 0 = k.\nProof. reflexivity. Qed."})
		require.NoError(t, err)
		require.True(t, v.Accepted, "%+v", v)
	})
}
