Notation "x #(* y" := (x + y) (at level 50).
Theorem add_zero : forall n : nat, n #(* 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
