(* Reads a host file outside the scratch directory; the test puts a real
   proof there, so this is accepted without a sandbox (the control) and
   fails inside one. *)
Load "/tmp/warren-verify-canary/Secret.v".
