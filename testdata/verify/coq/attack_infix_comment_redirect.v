Infix "+(*" := Nat.add (at level 50).
Check 1 +(* 2.
Redirect "/tmp/warren-verify-canary/redirected" Print nat.
Theorem add_zero : forall n : nat, n + 0 = n.
Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.
