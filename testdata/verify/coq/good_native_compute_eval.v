Definition big := Eval native_compute in (10 * 10).
Theorem add_zero : forall n : nat, n + 0 = n.
Proof.
  intros n. induction n as [|n IH]; simpl.
  - reflexivity.
  - rewrite IH. reflexivity.
Qed.
