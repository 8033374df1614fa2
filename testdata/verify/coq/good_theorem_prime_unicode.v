Theorem add_zéro' : forall n : nat, n + 0 = n.
Proof. intros n. induction n; simpl; congruence. Qed.
