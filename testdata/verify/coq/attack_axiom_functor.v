Module Type T. End T.
Module F (X : T).
  Local Axiom junk : False.
End F.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
