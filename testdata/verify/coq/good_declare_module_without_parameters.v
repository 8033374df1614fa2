Module Type Defs.
  Definition x := 1.
End Defs.
Declare Module D : Defs.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
