Module Type EMPTY. End EMPTY.
Require Import Coq.Program.Tactics.
Module F (X : EMPTY).
  Program Definition bogus : {n : nat | n = n + 1} := 0.
  Admit Obligations.
End F.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof.
  intros n. induction n as [|n IH]; simpl.
  - reflexivity.
  - rewrite IH. reflexivity.
Qed.
