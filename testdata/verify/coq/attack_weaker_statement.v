Theorem add_zero : forall n : nat, 0 + n = n.
Proof. reflexivity. Qed.
