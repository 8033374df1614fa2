Module Type Monoid.
  Parameter t : Type.
  Parameter unit : t.
End Monoid.
Module Nat_Monoid <: Monoid.
  Definition t := nat.
  Definition unit := 0.
End Nat_Monoid.
Module Use (M : Monoid).
  Definition u := M.unit.
End Use.
Module U := Use Nat_Monoid.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
