//go:build warren_session_primitive

// Remove the build constraint above once package sandbox/session (branch
// h/sess15a) is merged: isolated workers then serve sessions, the agent
// (warren-sandbox-agent) next to the warren binary.

package main

import "github.com/warrenhq/warren/worker"

func init() { isolatedSessions = worker.PrimitiveSessions("") }
