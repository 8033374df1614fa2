Module Type TP.
  Parameter junk : False.
End TP.
Module Type EMPTY. End EMPTY.
Module F (X : EMPTY).
  Module N.
    Include TP.
  End N.
End F.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof.
  intros n. induction n as [|n IH]; simpl.
  - reflexivity.
  - rewrite IH. reflexivity.
Qed.
