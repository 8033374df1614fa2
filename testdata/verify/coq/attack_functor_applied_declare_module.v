Module Type Assumes.
  Parameter junk : False.
End Assumes.
Module Type Empty. End Empty.
Module E. End E.
Module F (X : Empty).
  Declare Module Y : Assumes.
End F.
Module M := F E.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
