// Package syncbuf is a bytes.Buffer for tests that read output while
// something else writes it: a process's pipe, a progress ticker, a
// server's log.
//
// # Model
//
// [Buffer] is written with Write and read with String, each under one
// mutex: a reader sees every byte written before its call.
//
// # Failure handling
//
// Write never fails.
//
// # Limits
//
// It grows without bound, as bytes.Buffer does: for test output only.
package syncbuf
