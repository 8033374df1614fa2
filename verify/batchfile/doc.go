// Package batchfile reads the input of `warren verify PATH`: a JSONL file
// of proofs, or a directory of proof files (docs/verify.md), turned into
// verify tasks.
//
// # Model
//
// [Load] reads the file or directory, gives lines without a profile the
// default one and validates each task (except its batch, which the
// caller sets before publishing). It is apart from package verify, whose
// checkers and profiles the client does not link: `warren verify` needs
// only this.
//
// # Failure handling
//
// Every problem is an [*Error] naming the file and, for a JSONL file, the
// line, with what to fix; nothing is read past the first problem.
//
// # Limits
//
// A batch is read into memory whole; a line is at most
// messages.MaxTaskBytes.
package batchfile
