Notation "x #(* y" := (x + y) (at level 50).
Definition two := 1 #(* 1.
Load "/tmp/warren-verify-canary/Secret.v".
