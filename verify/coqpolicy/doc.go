// Package coqpolicy reads a Coq proof the way coqc does, because coqc is
// the one reading it: a small trusted OCaml plugin (warren_policy.ml,
// embedded here and built on the host against its Coq) is loaded into the
// untrusted compile ahead of the proof and sees every sentence as Coq's
// own parser produced it, before the sentence runs.
//
// # Model
//
// coqc hands each sentence to Stm.add, which calls Stm.document_add_hook
// with the parsed command (a Vernacexpr.vernac_control: control flags such
// as Fail, Redirect, Timeout; attributes; the command itself) before
// executing it, with every earlier sentence already executed (notations
// declared by the proof included). The plugin sets that hook. Under the
// profile's host_io: reject it refuses a command that touches host files,
// the load path or native code by raising before the command runs, so the
// compile stops there; it records every assumption the proof declares
// outside a section and a module type (and not under Fail or Succeed,
// which leave nothing), and every Declare Module, as JSON lines in a file
// the checker names ([Policy.Out]). [Build] compiles the plugin into a
// directory; [Plugin.Args] are the coqc arguments that load it
// (-I DIR -l DIR/prelude.v; the prelude's Local Declare ML Module keeps it
// out of the compiled library's dependencies); [Policy.Env] configures
// it; [Parse] reads the records.
//
// Nothing here re-reads the proof's text: sentence boundaries, comments,
// strings, notations (a keyword containing "(*" included), a byte-order
// mark and command names are Coq's.
//
// # Failure handling
//
// Fail closed at every step: a plugin that cannot be built is an error
// for the whole profile ([Build] names the missing development package);
// a plugin that cannot load or has no record file stops coqc before the
// proof's first sentence; a compile that exits 0 without the plugin's
// ready record is not a clean compile ([Reading.Ready]); a record that
// does not parse is an error. What the records say only ever adds
// rejections: a proof that forged one (it cannot write the file under
// host_io: reject) could only reject itself.
//
// # Limits
//
// The plugin is compiled against the coq-core libraries ocamlfind finds
// (libcoq-core-ocaml-dev on Debian); it loads only into that exact Coq.
// Commands a plugin outside the stdlib adds are allowed unless listed in
// warren_policy.ml; such plugins load only through the profile's
// coq.plugins allow-list. The recorded line is the line in the compiled
// file (header included); callers map it to the proof's own lines.
package coqpolicy
