Module Type Monoid.
  Parameter t : Type.
  Parameter op : t -> t -> t.
  Axiom assoc : forall a b c, op a (op b c) = op (op a b) c.
End Monoid.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
