Module Type T. End T.
Module F (X : T).
  Variables (a : nat) (junk : a = 1).
End F.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
