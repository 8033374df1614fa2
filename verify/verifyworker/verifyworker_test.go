package verifyworker

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warrenhq/warren/messages"
	"github.com/warrenhq/warren/sandbox"
	"github.com/warrenhq/warren/verify"
	"github.com/warrenhq/warren/worker"
)

// TestVerifierAdapts: the worker sees the service's profiles, verdicts and
// errors unchanged.
func TestVerifierAdapts(t *testing.T) {
	if _, err := os.Stat("/usr/bin/coqc"); err != nil {
		t.Skip("coqc not installed: the built-in profiles are not offered")
	}
	ps, err := verify.BuiltinProfiles()
	require.NoError(t, err)
	root, err := os.MkdirTemp("", "warren-verifyworker-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	c, err := verify.New(verify.Config{ScratchRoot: root})
	require.NoError(t, err)
	svc, _ := verify.NewService(c, ps, nil)
	var v worker.Verifier = New(svc)
	require.Equal(t, svc.Profiles(), v.Profiles())

	ran := false
	run := func(context.Context, sandbox.Spec) (*sandbox.Result, error) {
		ran = true
		return nil, errors.New("not expected")
	}
	task := &messages.Task{V: messages.Version, ID: "t", Batch: "b", Attempt: 1, Kind: messages.KindVerify, Profile: "coq",
		Verify: &messages.VerifySpec{Theorem: "t", Statement: "True", Proof: "Load \"x\"."}}
	out, err := v.Verify(context.Background(), run, task)
	require.NoError(t, err)
	require.False(t, ran, "refused by the policy scan before any step")
	require.Equal(t, messages.ReasonDisallowedCommand, out.Verdict.Reason)
	require.NotEmpty(t, out.Verdict.Toolchain)

	task.Profile = "missing"
	_, err = v.Verify(context.Background(), run, task)
	var me *messages.Error
	require.ErrorAs(t, err, &me)
	require.Equal(t, messages.CodeInvalidField, me.Code)
	require.NoError(t, v.(interface{ Close() error }).Close())
}
