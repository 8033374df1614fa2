Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. Timeout 30 induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
