Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n; simpl; [native_compute; reflexivity | congruence]. Qed.
