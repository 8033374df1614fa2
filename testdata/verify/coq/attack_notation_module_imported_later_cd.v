Module Syntax.
  Notation "x #(* y" := (x + y) (at level 50).
End Syntax.
Import Syntax.
Definition two := 1 #(* 1.
Cd "/tmp".
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
