Module Type TP.
  Parameter junk : False.
End TP.
Module Type EMPTY. End EMPTY.
Module F (X : EMPTY).
  Include TP.
  Definition bad : 0 = 1 := False_ind _ junk.
End F.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof.
  intros n. induction n as [|n IH]; simpl.
  - reflexivity.
  - rewrite IH. reflexivity.
Qed.
