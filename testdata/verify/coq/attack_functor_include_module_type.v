Module Type T.
  Axiom junk : False.
End T.
Module Type EMPTY. End EMPTY.
Module F (X : EMPTY).
  Include T.
End F.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof.
  intros n. induction n as [|n IH]; simpl.
  - reflexivity.
  - rewrite IH. reflexivity.
Qed.
