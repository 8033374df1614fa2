Theorem add_zero : forall n : nat, n + 0 = n.
Proof.
  intros n. induction n as [|n IH].
  - reflexivity.
  - Redirect "goal" Show. simpl. rewrite IH. reflexivity.
Qed.
