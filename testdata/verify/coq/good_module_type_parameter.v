Module Type Assumes.
  Parameters (junk : False) (more : 0 = 1).
End Assumes.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
