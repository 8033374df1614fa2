Require Import PArith.

(* 10^12 iterations in constant memory: a loop in all but name. *)
Eval vm_compute in Pos.iter negb true 1000000000000%positive.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. Admitted.
